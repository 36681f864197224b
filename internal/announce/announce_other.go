//go:build !linux

package announce

import (
	"net"
	"net/netip"
)

// Announcer sends unsolicited address announcements; on this system New
// fails with ErrUnsupported.
type Announcer struct{}

// New returns ErrUnsupported: sending needs Linux packet sockets.
func New(ifi *net.Interface) (*Announcer, error) { return nil, ErrUnsupported }

// Close does nothing.
func (a *Announcer) Close() error { return nil }

// Announce returns ErrUnsupported.
func (a *Announcer) Announce(addr netip.Addr) error { return ErrUnsupported }

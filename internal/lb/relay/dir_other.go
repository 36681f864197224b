//go:build !linux

package relay

import (
	"errors"
	"net"
	"net/netip"
)

// Pools are the copy buffers and splice pipes of the relay, which needs
// Linux.
type Pools struct{ _ PipePool }

// AcceptFD needs Linux.
func AcceptFD(*net.TCPListener) (int, error) { return -1, errors.New("needs Linux") }

// LocalAddr needs Linux: it knows no address.
func LocalAddr(int) netip.AddrPort { return netip.AddrPort{} }

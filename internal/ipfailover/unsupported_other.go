//go:build !linux

package ipfailover

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
)

// errUnsupported is returned by everything that needs the system.
var errUnsupported = errors.New("ipfailover: unsupported on this operating system (Linux only: raw VRRP sockets, netlink, nftables)")

// ErrNoChain is returned (wrapped) by Install when no chain has the name.
var ErrNoChain = errors.New("no such nftables chain")

// Pool runs this node's part of an IP failover pool (Linux only).
type Pool struct{}

// New returns an error: pools need Linux.
func New(opts Options) (*Pool, error) { return nil, errUnsupported }

// Prepare returns an error: pools need Linux.
func (p *Pool) Prepare(ctx context.Context) (string, error) { return "", errUnsupported }

// Run returns an error: pools need Linux.
func (p *Pool) Run(ctx context.Context) error { return errUnsupported }

// Status returns the zero Status.
func (p *Pool) Status() Status { return Status{} }

// Running is never closed: Run is unsupported.
func (p *Pool) Running() <-chan struct{} { return nil }

// Install returns an error: nftables is Linux only.
func (f Firewall) Install() ([]string, error) { return nil, errUnsupported }

// Remove returns an error: nftables is Linux only.
func (f Firewall) Remove() error { return errUnsupported }

// Packets returns an error: nftables is Linux only.
func (f Firewall) Packets() (uint64, error) { return 0, errUnsupported }

// RouteInterface returns an error: route lookups need Linux.
func RouteInterface(vips []netip.Addr) (string, error) { return "", errUnsupported }

// NodeAddress returns an error: it needs Linux.
func NodeAddress(iface string, family int, vips []netip.Addr) (netip.Addr, error) {
	return netip.Addr{}, errUnsupported
}

// ListenVRIDs returns an error: raw VRRP sockets need Linux.
func ListenVRIDs(ctx context.Context, clk clock.Clock, family, ifIndex int, d time.Duration) ([]Heard, error) {
	return nil, errUnsupported
}

// PeerAddress returns false: it needs Linux.
func PeerAddress(iface string, peers []netip.Addr) (netip.Addr, bool) { return netip.Addr{}, false }

// RemoveLeftovers returns an error: it needs Linux.
func RemoveLeftovers(iface string, vips []netip.Addr) ([]netip.Prefix, error) {
	return nil, errUnsupported
}

// Claim returns an error: it needs Linux.
func Claim(name string) (io.Closer, error) { return nil, errUnsupported }

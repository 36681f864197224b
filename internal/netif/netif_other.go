//go:build !linux

package netif

import (
	"context"
	"net/netip"
)

// Handle manages addresses and links; on this system every method fails
// with ErrUnsupported.
type Handle struct{}

// Open returns ErrUnsupported: VIP management needs Linux rtnetlink.
func Open() (*Handle, error) { return nil, ErrUnsupported }

// Close does nothing.
func (h *Handle) Close() {}

// AddVIP returns ErrUnsupported.
func (h *Handle) AddVIP(v VIP) error { return ErrUnsupported }

// DelVIP returns ErrUnsupported.
func (h *Handle) DelVIP(v VIP) error { return ErrUnsupported }

// HasVIP returns ErrUnsupported.
func (h *Handle) HasVIP(v VIP) (bool, error) { return false, ErrUnsupported }

// Present returns ErrUnsupported.
func (h *Handle) Present(vips []VIP) ([]bool, error) { return nil, ErrUnsupported }

// Link returns ErrUnsupported.
func (h *Handle) Link(name string) (LinkInfo, error) { return LinkInfo{}, ErrUnsupported }

// PrimaryIPv4 returns ErrUnsupported.
func (h *Handle) PrimaryIPv4(name string, exclude []netip.Addr) (netip.Addr, error) {
	return netip.Addr{}, ErrUnsupported
}

// LinkLocalIPv6 returns ErrUnsupported.
func (h *Handle) LinkLocalIPv6(name string) (netip.Addr, error) { return netip.Addr{}, ErrUnsupported }

// Tentative returns ErrUnsupported.
func (h *Handle) Tentative(name string, addr netip.Addr) (bool, error) { return false, ErrUnsupported }

// LocalAddrs returns ErrUnsupported.
func (h *Handle) LocalAddrs() (map[netip.Addr]bool, error) { return nil, ErrUnsupported }

// WatchLinks returns ErrUnsupported.
func (h *Handle) WatchLinks(ctx context.Context, f func(name string, up bool)) error {
	return ErrUnsupported
}

// WatchAddrs returns ErrUnsupported.
func (h *Handle) WatchAddrs(ctx context.Context, f func(p netip.Prefix, added bool)) error {
	return ErrUnsupported
}

// EnsureVMAC returns ErrUnsupported.
func (h *Handle) EnsureVMAC(v VMAC) (int, error) { return 0, ErrUnsupported }

// DeleteVMAC returns ErrUnsupported.
func (h *Handle) DeleteVMAC(v VMAC) error { return ErrUnsupported }

// SweepVMACs returns ErrUnsupported.
func (h *Handle) SweepVMACs(l VMACLedger, keep func(VMAC) bool) ([]VMAC, error) {
	return nil, ErrUnsupported
}

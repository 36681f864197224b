package netif

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// EnsureVMAC creates v (a private macvlan on its parent, with its MAC,
// addrgenmode none, up) or takes the one already there when it is such a
// macvlan, and returns its index. As keepalived does, for IPv4 the parent
// gets arp_ignore 1 and arp_filter 1 (it must not answer ARP for the VIPs
// with its own MAC) and the VMAC arp_ignore 1 and accept_local 1; for IPv6
// the parent's link-local address is copied onto the VMAC (nodad).
func (h *Handle) EnsureVMAC(v VMAC) (int, error) {
	parent, err := h.nl.LinkByName(v.Parent)
	if err != nil {
		return 0, fmt.Errorf("VMAC %s: parent %s: %w", v.Name, v.Parent, err)
	}
	l, err := h.nl.LinkByName(v.Name)
	switch {
	case err == nil:
		if !isVMACOf(l, parent, v) {
			return 0, fmt.Errorf("interface %s already exists and is not a private macvlan on %s with MAC %s", v.Name, v.Parent, v.MAC)
		}
	case isLinkNotFound(err):
		mv := &netlink.Macvlan{LinkAttrs: netlink.LinkAttrs{Name: v.Name, ParentIndex: parent.Attrs().Index, HardwareAddr: v.MAC},
			Mode: netlink.MACVLAN_MODE_PRIVATE}
		if err := h.nl.LinkAdd(mv); err != nil {
			return 0, fmt.Errorf("create VMAC %s on %s: %w", v.Name, v.Parent, err)
		}
		if l, err = h.nl.LinkByName(v.Name); err != nil {
			return 0, fmt.Errorf("VMAC %s: %w", v.Name, err)
		}
		// No address of its own: an EUI-64 link-local from the VMAC would
		// be the same on every node holding the VRID.
		if err := h.nl.LinkSetIP6AddrGenMode(l, 1); err != nil { // IN6_ADDR_GEN_MODE_NONE
			return 0, fmt.Errorf("VMAC %s: addrgenmode none: %w", v.Name, err)
		}
	default:
		return 0, fmt.Errorf("VMAC %s: %w", v.Name, err)
	}
	if v.Family == 4 {
		for _, s := range []struct{ dev, key, val string }{
			{v.Parent, "arp_ignore", "1"}, {v.Parent, "arp_filter", "1"},
			{v.Name, "arp_ignore", "1"}, {v.Name, "accept_local", "1"},
		} {
			if err := setSysctl(filepath.Join("/proc/sys/net/ipv4/conf", s.dev, s.key), s.val); err != nil {
				return 0, fmt.Errorf("VMAC %s: %w", v.Name, err)
			}
		}
	}
	if err := h.nl.LinkSetUp(l); err != nil {
		return 0, fmt.Errorf("VMAC %s: set up: %w", v.Name, err)
	}
	if v.Family == 6 {
		if err := h.copyLinkLocal(parent, l); err != nil {
			return 0, fmt.Errorf("VMAC %s: %w", v.Name, err)
		}
	}
	return l.Attrs().Index, nil
}

// copyLinkLocal puts the parent's link-local addresses on the VMAC.
func (h *Handle) copyLinkLocal(parent, l netlink.Link) error {
	addrs, err := h.nl.AddrList(parent, netlink.FAMILY_V6)
	if err != nil {
		return fmt.Errorf("addresses of %s: %w", parent.Attrs().Name, err)
	}
	for _, a := range addrs {
		if a.IP.IsLinkLocalUnicast() {
			c := &netlink.Addr{IPNet: a.IPNet, Flags: unix.IFA_F_NODAD, Scope: unix.RT_SCOPE_LINK}
			if err := h.nl.AddrReplace(l, c); err != nil {
				return fmt.Errorf("copy link-local %s: %w", a.IP, err)
			}
		}
	}
	return nil
}

func isVMACOf(l, parent netlink.Link, v VMAC) bool {
	mv, ok := l.(*netlink.Macvlan)
	return ok && mv.Mode == netlink.MACVLAN_MODE_PRIVATE && mv.Attrs().ParentIndex == parent.Attrs().Index &&
		bytes.Equal(mv.Attrs().HardwareAddr, v.MAC)
}

// DeleteVMAC removes v if it is there and is the macvlan EnsureVMAC makes
// (an interface of that name that is something else is left alone, with
// an error). A missing interface or parent is not an error.
func (h *Handle) DeleteVMAC(v VMAC) error {
	l, err := h.nl.LinkByName(v.Name)
	if isLinkNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("VMAC %s: %w", v.Name, err)
	}
	mv, ok := l.(*netlink.Macvlan)
	if !ok || !bytes.Equal(mv.Attrs().HardwareAddr, v.MAC) {
		return fmt.Errorf("interface %s is not the VMAC (macvlan with MAC %s); left alone", v.Name, v.MAC)
	}
	if err := h.nl.LinkDel(l); err != nil && !isLinkNotFound(err) {
		return fmt.Errorf("delete VMAC %s: %w", v.Name, err)
	}
	return nil
}

// SweepVMACs deletes every VMAC recorded in l except those keep reports
// true for, and leaves only those in the ledger. It returns the deleted.
func (h *Handle) SweepVMACs(l VMACLedger, keep func(VMAC) bool) ([]VMAC, error) {
	vmacs, err := l.Load()
	if err != nil {
		return nil, err
	}
	var kept, removed []VMAC
	var errs []error
	for _, v := range vmacs {
		if keep != nil && keep(v) {
			kept = append(kept, v)
			continue
		}
		if err := h.DeleteVMAC(v); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, v)
	}
	if len(vmacs) > 0 {
		if err := l.Save(kept); err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

func setSysctl(path, val string) error {
	if err := os.WriteFile(path, []byte(val), 0o644); err != nil {
		return fmt.Errorf("sysctl %s=%s: %w", path, val, err)
	}
	return nil
}

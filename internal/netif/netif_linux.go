package netif

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// dumpRetries bounds the retries of a netlink dump the kernel marked
// interrupted (NLM_F_DUMP_INTR: the table changed while it was read).
const dumpRetries = 5

// lifetimeForever is INFINITY_LIFE_TIME for IFA_CACHEINFO.
const lifetimeForever = 0xffffffff

// Handle manages addresses and links in one network namespace: the one
// current on the calling thread when Open ran. Its sockets stay in that
// namespace, so its methods may be called from any goroutine afterwards.
type Handle struct {
	nl *netlink.Handle
	ns netns.NsHandle

	// vipLinks caches interface lookups for AddVIP, which a takeover with
	// thousands of VIPs calls once per VIP: a lookup costs a netlink round
	// trip. An entry is dropped when the kernel no longer knows its index.
	mu       sync.Mutex
	vipLinks map[string]netlink.Link
}

// Open returns a netlink handle in the calling thread's network namespace.
// A caller that switched namespaces must hold runtime.LockOSThread.
func Open() (*Handle, error) {
	ns, err := netns.Get()
	if err != nil {
		return nil, fmt.Errorf("netif open: current netns: %w", err)
	}
	// NewHandle, not NewHandleAt(ns): the socket is made in the calling
	// thread's namespace, which is ns, without setns(2). setns needs
	// CAP_SYS_ADMIN even into the current namespace, and the agent runs
	// with only NET_ADMIN, NET_RAW and NET_BIND_SERVICE (docs/security.md).
	nh, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		ns.Close()
		return nil, fmt.Errorf("netif open: netlink socket: %w", err)
	}
	return &Handle{nl: nh, ns: ns}, nil
}

// Close releases the handle's sockets.
func (h *Handle) Close() {
	h.nl.Close()
	h.ns.Close()
}

func (h *Handle) link(name string) (netlink.Link, error) {
	l, err := h.nl.LinkByName(name)
	if err != nil {
		return nil, fmt.Errorf("link %q: %w", name, err)
	}
	return l, nil
}

func isLinkNotFound(err error) bool {
	var nf netlink.LinkNotFoundError
	return errors.As(err, &nf) || errors.Is(err, unix.ENODEV)
}

// nlAddr converts v (validated) to the netlink form.
func nlAddr(v VIP, forAdd bool) *netlink.Addr {
	a := v.Prefix.Addr()
	bits := 128
	if a.Is4() {
		bits = 32
	}
	scope, _ := scopeValue(v.Scope)
	na := &netlink.Addr{
		IPNet: &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(v.Prefix.Bits(), bits)},
		Scope: scope,
	}
	if a.Is4() {
		// The library computes a broadcast address when none is given;
		// 0.0.0.0 tells it to send none, as `ip addr add` without brd.
		na.Broadcast = net.IPv4zero
		if v.Broadcast.IsValid() {
			na.Broadcast = v.Broadcast.AsSlice()
		}
		if forAdd {
			// On delete the label is left out so the kernel matches the
			// address and length alone, as HasVIP does.
			na.Label = v.Label
		}
	} else {
		na.Flags |= unix.IFA_F_NODAD
		if forAdd && !v.Preferred {
			na.ValidLft = lifetimeForever
			na.PreferedLft = 0
		}
	}
	if v.NoPrefixRoute {
		na.Flags |= unix.IFA_F_NOPREFIXROUTE
	}
	return na
}

// AddVIP adds v. IPv6 VIPs always get IFA_F_NODAD, so they are usable at
// once, as keepalived does. Adding an address that is already there is not
// an error and leaves its flags as they are (for IPv6 the kernel refuses a
// second copy of an address whatever its length, so that is "there" too).
func (h *Handle) AddVIP(v VIP) error {
	if err := v.Validate(); err != nil {
		return fmt.Errorf("add VIP: %w", err)
	}
	for attempt := 0; ; attempt++ {
		l, cached, err := h.vipLink(v.Dev)
		if err != nil {
			return fmt.Errorf("add VIP %s: %w", v, err)
		}
		err = h.nl.AddrAdd(l, nlAddr(v, true))
		if err == nil || errors.Is(err, unix.EEXIST) {
			return nil
		}
		if cached && attempt == 0 && (errors.Is(err, unix.ENODEV) || errors.Is(err, unix.EINVAL)) {
			h.forgetLink(v.Dev) // the interface was recreated: look it up again
			continue
		}
		return fmt.Errorf("add VIP %s: %w", v, err)
	}
}

func (h *Handle) vipLink(name string) (l netlink.Link, cached bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if l, ok := h.vipLinks[name]; ok {
		return l, true, nil
	}
	if l, err = h.link(name); err != nil {
		return nil, false, err
	}
	if h.vipLinks == nil {
		h.vipLinks = map[string]netlink.Link{}
	}
	h.vipLinks[name] = l
	return l, false, nil
}

func (h *Handle) forgetLink(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.vipLinks, name)
}

// DelVIP removes the address v.Prefix (address and length) from v.Dev.
// An address or interface that is already gone is not an error.
func (h *Handle) DelVIP(v VIP) error {
	if err := v.Validate(); err != nil {
		return fmt.Errorf("delete VIP: %w", err)
	}
	l, err := h.link(v.Dev)
	if err != nil {
		if isLinkNotFound(err) {
			return nil
		}
		return fmt.Errorf("delete VIP %s: %w", v, err)
	}
	err = h.nl.AddrDel(l, nlAddr(v, false))
	if err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("delete VIP %s: %w", v, err)
	}
	return nil
}

// HasVIP reports whether v's address, with v's prefix length, is configured
// on v.Dev. A missing interface holds nothing: (false, nil).
func (h *Handle) HasVIP(v VIP) (bool, error) {
	if err := v.Validate(); err != nil {
		return false, fmt.Errorf("check VIP: %w", err)
	}
	l, err := h.link(v.Dev)
	if err != nil {
		if isLinkNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("check VIP %s: %w", v, err)
	}
	fam := netlink.FAMILY_V6
	if v.Prefix.Addr().Is4() {
		fam = netlink.FAMILY_V4
	}
	addrs, err := h.addrs(l, fam)
	if err != nil {
		return false, fmt.Errorf("check VIP %s: %w", v, err)
	}
	for _, a := range addrs {
		p, ok := prefixOf(a)
		if ok && p.Addr() == v.Prefix.Addr() && p.Bits() == v.Prefix.Bits() {
			return true, nil
		}
	}
	return false, nil
}

// Present reports, for each of vips, whether its address is configured with
// its prefix length on its interface, as HasVIP does, from one dump of the
// namespace's addresses however many VIPs there are. A VIP whose interface
// is missing is not present.
func (h *Handle) Present(vips []VIP) ([]bool, error) {
	type key struct {
		index int
		p     netip.Prefix
	}
	index := map[string]int{} // interface name -> index; 0 when missing
	for _, v := range vips {
		if err := v.Validate(); err != nil {
			return nil, fmt.Errorf("check VIPs: %w", err)
		}
		if _, ok := index[v.Dev]; ok {
			continue
		}
		l, err := h.link(v.Dev)
		switch {
		case err == nil:
			index[v.Dev] = l.Attrs().Index
		case isLinkNotFound(err):
			index[v.Dev] = 0
		default:
			return nil, fmt.Errorf("check VIPs: %w", err)
		}
	}
	out := make([]bool, len(vips))
	if len(vips) == 0 {
		return out, nil
	}
	var as []netlink.Addr
	var err error
	for i := 0; i < dumpRetries; i++ {
		if as, err = h.nl.AddrList(nil, netlink.FAMILY_ALL); !errors.Is(err, netlink.ErrDumpInterrupted) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("check VIPs: list addresses: %w", err)
	}
	have := make(map[key]bool, len(as))
	for _, a := range as {
		if p, ok := prefixOf(a); ok {
			have[key{a.LinkIndex, p}] = true
		}
	}
	for i, v := range vips {
		idx := index[v.Dev]
		out[i] = idx != 0 && have[key{idx, netip.PrefixFrom(v.Prefix.Addr(), v.Prefix.Bits())}]
	}
	return out, nil
}

func prefixOf(a netlink.Addr) (netip.Prefix, bool) {
	ip, ok := netip.AddrFromSlice(a.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := a.Mask.Size()
	return netip.PrefixFrom(ip.Unmap(), ones), true
}

// addrs lists l's addresses, retrying a dump the kernel interrupted.
func (h *Handle) addrs(l netlink.Link, family int) ([]netlink.Addr, error) {
	var err error
	for i := 0; i < dumpRetries; i++ {
		var as []netlink.Addr
		as, err = h.nl.AddrList(l, family)
		if err == nil {
			return as, nil
		}
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return nil, fmt.Errorf("list addresses of %s: %w", l.Attrs().Name, err)
		}
	}
	return nil, fmt.Errorf("list addresses of %s: still interrupted after %d tries: %w", l.Attrs().Name, dumpRetries, err)
}

// LocalAddrs returns every address configured on a link of the handle's
// namespace, IPv4 and IPv6, without zones.
func (h *Handle) LocalAddrs() (map[netip.Addr]bool, error) {
	var err error
	for i := 0; i < dumpRetries; i++ {
		var as []netlink.Addr
		if as, err = h.nl.AddrList(nil, netlink.FAMILY_ALL); err == nil {
			out := make(map[netip.Addr]bool, len(as))
			for _, a := range as {
				if p, ok := prefixOf(a); ok {
					out[p.Addr()] = true
				}
			}
			return out, nil
		}
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return nil, fmt.Errorf("list addresses: %w", err)
		}
	}
	return nil, fmt.Errorf("list addresses: still interrupted after %d tries: %w", dumpRetries, err)
}

func linkUp(a *netlink.LinkAttrs) bool {
	return a.Flags&net.FlagUp != 0 && a.Flags&net.FlagRunning != 0
}

// Link returns facts about the named link.
func (h *Handle) Link(name string) (LinkInfo, error) {
	l, err := h.link(name)
	if isLinkNotFound(err) {
		return LinkInfo{}, fmt.Errorf("link %q: %w", name, ErrNoLink)
	}
	if err != nil {
		return LinkInfo{}, err
	}
	a := l.Attrs()
	return LinkInfo{
		Name:  a.Name,
		Index: a.Index,
		Up:    linkUp(a),
		MAC:   append(net.HardwareAddr(nil), a.HardwareAddr...),
		MTU:   a.MTU,
	}, nil
}

// PrimaryIPv4 returns the first IPv4 address on the interface, in the
// kernel's order, that is not in exclude (the VIPs): keepalived's primary
// address, the source of VRRP adverts. It wraps ErrNoAddress when there is
// none.
func (h *Handle) PrimaryIPv4(name string, exclude []netip.Addr) (netip.Addr, error) {
	l, err := h.link(name)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("primary IPv4: %w", err)
	}
	addrs, err := h.addrs(l, netlink.FAMILY_V4)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("primary IPv4: %w", err)
	}
next:
	for _, a := range addrs {
		p, ok := prefixOf(a)
		if !ok || !p.Addr().Is4() {
			continue
		}
		for _, x := range exclude {
			if x.Unmap() == p.Addr() {
				continue next
			}
		}
		return p.Addr(), nil
	}
	return netip.Addr{}, fmt.Errorf("primary IPv4 of %s: %w (every IPv4 address is excluded, or there is none)", name, ErrNoAddress)
}

// LinkLocalIPv6 returns the interface's fe80::/10 address, with the zone
// set to the interface name. Tentative (DAD still running) and DAD-failed
// addresses are skipped: they cannot be a source yet; it then wraps
// ErrNoAddress and the caller may retry.
func (h *Handle) LinkLocalIPv6(name string) (netip.Addr, error) {
	l, err := h.link(name)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("link-local IPv6: %w", err)
	}
	addrs, err := h.addrs(l, netlink.FAMILY_V6)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("link-local IPv6: %w", err)
	}
	for _, a := range addrs {
		p, ok := prefixOf(a)
		if !ok || !p.Addr().IsLinkLocalUnicast() || a.Flags&(unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED) != 0 {
			continue
		}
		return p.Addr().WithZone(name), nil
	}
	return netip.Addr{}, fmt.Errorf("link-local IPv6 of %s: %w (none, or still tentative)", name, ErrNoAddress)
}

// Tentative reports whether addr cannot be a source on the link yet: it is
// still tentative (IPv6 duplicate address detection has not finished; the
// kernel refuses it as a source, sendmsg fails with EINVAL), or it is not
// on the link at all (as right after the link came up, before the kernel
// added its link-local address again).
func (h *Handle) Tentative(name string, addr netip.Addr) (bool, error) {
	l, err := h.link(name)
	if err != nil {
		return false, fmt.Errorf("tentative %s: %w", addr, err)
	}
	addrs, err := h.addrs(l, netlink.FAMILY_V6)
	if err != nil {
		return false, fmt.Errorf("tentative %s: %w", addr, err)
	}
	want := addr.WithZone("")
	for _, a := range addrs {
		if p, ok := prefixOf(a); ok && p.Addr().WithZone("") == want {
			return a.Flags&unix.IFA_F_TENTATIVE != 0, nil
		}
	}
	return true, nil
}

// WatchLinks calls f(name, up) for every link in the handle's namespace
// once with its current state, then on every change of up (see LinkInfo.Up;
// a deleted link is reported down), until ctx is done; then it returns nil.
// f runs on the caller's goroutine. If the kernel drops events (the
// subscription socket overflowed) WatchLinks resubscribes and reports the
// links whose state changed meanwhile; it returns an error only when it
// cannot subscribe again.
func (h *Handle) WatchLinks(ctx context.Context, f func(name string, up bool)) error {
	known := map[int]linkState{}
	return resubscribe(ctx, "links", func() (bool, error) {
		return h.watchLinksOnce(ctx, known, f)
	})
}

// WatchAddrs calls f(p, added) for every address added to or removed from
// an interface of the handle's namespace (p is the address with its prefix
// length), until ctx is done; then it returns nil. f runs on the caller's
// goroutine. Each time a subscription starts WatchAddrs calls f with the
// zero Prefix, meaning "any address may have come or gone before now": at
// the start (so a caller that looked at the addresses before calling
// WatchAddrs misses no change made meanwhile), and after the kernel dropped
// events (the subscription socket overflowed), when it resubscribes. It
// returns an error only when it cannot subscribe again.
func (h *Handle) WatchAddrs(ctx context.Context, f func(p netip.Prefix, added bool)) error {
	return resubscribe(ctx, "addresses", func() (bool, error) {
		return h.watchAddrsOnce(ctx, f)
	})
}

// maxQuietFailures bounds resubscriptions in a row that deliver nothing.
const maxQuietFailures = 3

// resubscribe runs one subscription after another until ctx is done, and
// returns nil then. It gives up, with the last error, after
// maxQuietFailures subscriptions in a row that delivered nothing.
func resubscribe(ctx context.Context, what string, once func() (delivered bool, err error)) error {
	quiet := 0
	for {
		delivered, err := once()
		if ctx.Err() != nil {
			return nil
		}
		if delivered {
			quiet = 0
		} else {
			quiet++
		}
		if err != nil && quiet >= maxQuietFailures {
			return fmt.Errorf("watch %s: %w", what, err)
		}
	}
}

type linkState struct {
	name string
	up   bool
}

func (h *Handle) watchLinksOnce(ctx context.Context, known map[int]linkState, f func(string, bool)) (delivered bool, err error) {
	s, err := h.openEvents(unix.RTMGRP_LINK)
	if err != nil {
		return false, err
	}
	defer s.Close()
	if err := s.dump(unix.RTM_GETLINK, make([]byte, unix.SizeofIfInfomsg)); err != nil {
		return false, err
	}
	// The dump's links come among the events; one interrupted by a change
	// (NLM_F_DUMP_INTR) may miss it, but the change's own event follows.
	return s.readAll(ctx, func(m *syscall.NetlinkMessage) {
		if m.Header.Type != unix.RTM_NEWLINK && m.Header.Type != unix.RTM_DELLINK {
			return
		}
		idx, name, up, err := parseLinkEvent(m)
		if err != nil {
			return
		}
		if m.Header.Type == unix.RTM_DELLINK {
			if old, ok := known[idx]; ok {
				delete(known, idx)
				if old.up {
					f(old.name, false)
				}
			}
			return
		}
		now := linkState{name: name, up: up}
		old, ok := known[idx]
		known[idx] = now
		if !ok || old.up != now.up {
			f(now.name, now.up)
		}
	})
}

func (h *Handle) watchAddrsOnce(ctx context.Context, f func(netip.Prefix, bool)) (delivered bool, err error) {
	s, err := h.openEvents(unix.RTMGRP_IPV4_IFADDR | unix.RTMGRP_IPV6_IFADDR)
	if err != nil {
		return false, err
	}
	defer s.Close()
	f(netip.Prefix{}, false) // anything may have changed before the subscription
	return s.readAll(ctx, func(m *syscall.NetlinkMessage) {
		if m.Header.Type != unix.RTM_NEWADDR && m.Header.Type != unix.RTM_DELADDR {
			return
		}
		p, err := parseAddrEvent(m)
		if err != nil {
			return
		}
		f(p, m.Header.Type == unix.RTM_NEWADDR)
	})
}

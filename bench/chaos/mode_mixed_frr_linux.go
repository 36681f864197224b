package main

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/chaos"
	"github.com/vipstack/vipstack/internal/peers"
)

// mixedImpl is node i's implementation: keepalived and vipstack
// alternating, or with FRR keepalived, vipstack and FRR's vrrpd in turn.
func mixedImpl(i int, frr bool) peers.Impl {
	if frr {
		return []peers.Impl{peers.Keepalived, peers.Vipstack, peers.FRR}[i%3]
	}
	if i%2 == 1 {
		return peers.Vipstack
	}
	return peers.Keepalived
}

// advertsFirst reports whether impl, taking over, sends its first
// advertisement before the VIPs are usable on its node (chaos.Config's
// AdvertFirst). keepalived does (RFC 5798's order). vipstack adds the
// VIPs first (holdFirst). FRR 8.4's vrrpd asks zebra to clear the
// macvlan's protodown and holds its advertisement until the macvlan is
// up ("Delaying VRRP advertisement until interface is up" in its log; a
// capture on the taking host had the carrier come up 1.1 ms before its
// first advert): the VIP is usable first.
func advertsFirst(impl peers.Impl) bool { return impl == peers.Keepalived }

// frrRouters are node i's virtual routers for FRR's vrrpd: every group of
// the run, at node i's priorities. FRR runs each family of a VRID on its
// own macvlan and takes VRRPv2 for IPv4 only, at whole seconds: the
// groups fit (VRRPv2 is the IPv4 group at 1 s).
func (m *mixedMode) frrRouters(i int) []peers.FRRConf {
	var out []peers.FRRConf
	for j, mi := range mixedInstances {
		out = append(out, peers.FRRConf{Version: mi.version, Interval: m.advert(mi), VRID: mi.vrid,
			Priority: int(m.priority(i, j)), Interface: m.nodes[i].host.Link, VIPs: []netip.Addr{mi.vip.Addr()}})
	}
	return out
}

// frrConf renders node n's vrrpd.conf (a comment counts its reloads).
func (m *mixedMode) frrConf(n *mixedNode) (string, error) {
	text, err := peers.RenderFRRRouters(m.frrRouters(slices.Index(m.nodes, n)))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("! reload %d\n%s", n.reload, text), nil
}

// startFRR runs zebra and vrrpd on node n: set up and started the first
// time, started again on the macvlans a kill left after that.
func (m *mixedMode) startFRR(n *mixedNode) error {
	n.mu.Lock()
	f := n.frr
	n.mu.Unlock()
	if f == nil {
		started, err := peers.StartFRRRouters(n.host, m.frrRouters(slices.Index(m.nodes, n)), n.dir)
		if err != nil {
			return err
		}
		n.mu.Lock()
		n.frr = started
		n.mu.Unlock()
		return nil
	}
	if f.Running() {
		return fmt.Errorf("%s still runs", n.name)
	}
	return f.Restart()
}

// reloadFRR rewrites node n's vrrpd.conf (a new comment) and has vrrpd
// apply it (vtysh -f), FRR's reload of an unchanged file.
func (m *mixedMode) reloadFRR(n *mixedNode) error {
	n.mu.Lock()
	n.reload++
	f := n.frr
	text, err := m.frrConf(n)
	n.mu.Unlock()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(n.dir, "vrrpd.conf"), []byte(text), 0o644); err != nil {
		return err
	}
	if f == nil || !f.Running() {
		return nil // the file is read when it starts again
	}
	if err := f.Reload(); err != nil {
		return fmt.Errorf("%s: vtysh -f: %w", n.name, err)
	}
	return nil
}

// frrHeld returns the VIPs on FRR's macvlans (named by macvlans) that
// are up with a carrier: vrrpd keeps the VIPs on them in every state and
// sets them protodown (no carrier) unless master. The kernel also gives a
// macvlan its carrier back when its parent's returns, protodown or not,
// and clearing protodown gives it one over a downed parent: both count as
// held, as a VIP configured on a downed link does for the others.
func frrHeld(links []netlink.Link, addrs []netlink.Addr, macvlans []string, vips []netip.Addr) []netip.Addr {
	running := map[int]bool{}
	for _, l := range links {
		a := l.Attrs()
		if slices.Contains(macvlans, a.Name) && a.RawFlags&unix.IFF_UP != 0 && a.RawFlags&unix.IFF_RUNNING != 0 {
			running[a.Index] = true
		}
	}
	var out []netip.Addr
	for _, a := range addrs {
		if a.IPNet == nil || !running[a.LinkIndex] {
			continue
		}
		if ip, ok := netip.AddrFromSlice(a.IP); ok && slices.Contains(vips, ip.Unmap()) && !slices.Contains(out, ip.Unmap()) {
			out = append(out, ip.Unmap())
		}
	}
	return out
}

// sampleFRR reads which VIPs FRR node n holds.
func (m *mixedMode) sampleFRR(n *mixedNode, f *peers.FRRNode) ([]netip.Addr, error) {
	links, err := n.nl.LinkList()
	if err != nil {
		return nil, fmt.Errorf("%s: list links: %w", n.name, err)
	}
	addrs, err := n.nl.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return nil, fmt.Errorf("%s: list addresses: %w", n.name, err)
	}
	return frrHeld(links, addrs, f.Links(), m.cfg.VIPs), nil
}

// frrFault is fault's part for an FRR node: kill -9 of zebra and vrrpd
// and a restart, both stopped and continued, loss also on the macvlans
// (vrrpd sends from them). ok is false for the faults every
// implementation meets alike (cut, ifdown).
func (m *mixedMode) frrFault(f chaos.Fault, n *mixedNode) (begin, end func() error, ok bool) {
	frr := func() (*peers.FRRNode, error) {
		n.mu.Lock()
		defer n.mu.Unlock()
		if n.frr == nil || !n.frr.Running() {
			return nil, fmt.Errorf("%s does not run", n.name)
		}
		return n.frr, nil
	}
	impair := func(loss int, delay time.Duration) error {
		n.mu.Lock()
		links := n.frr.Links()
		n.mu.Unlock()
		return n.host.ImpairWith(loss, delay, m.netem, links...)
	}
	switch f.Kind {
	case chaos.KillAgent:
		begin = func() error {
			p, err := frr()
			if err != nil {
				return err
			}
			return p.Kill()
		}
		end = func() error { return m.start(n) }
	case chaos.Stall:
		sig := func(s syscall.Signal) error {
			p, err := frr()
			if err != nil {
				return err
			}
			return p.SignalAll(s)
		}
		begin, end = func() error { return sig(syscall.SIGSTOP) }, func() error { return sig(syscall.SIGCONT) }
	case chaos.Loss, chaos.HeavyLoss:
		begin, end = func() error { return impair(f.Percent, 0) }, func() error { return impair(0, 0) }
	case chaos.Delay:
		begin, end = func() error { return impair(0, f.Delay) }, func() error { return impair(0, 0) }
	default:
		return nil, nil, false
	}
	return begin, end, true
}

package engine

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/vipstack/vipstack/internal/announce"
	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/vrrp/transport"
)

// The engine's seams: what it needs of the kernel, declared here where it
// is used. Options leaves them nil in production, and the engine opens the
// real ones (netif.Open, transport.Listen, announce.New); the package's
// tests join several engines on one simulated segment instead (see
// docs/design/engine.md).

// Netlink is the netlink side of the engine: the links and addresses of
// its network namespace, and their changes. *netif.Handle is the real one.
type Netlink interface {
	// Link returns facts about the named link; the error wraps
	// netif.ErrNoLink when there is none.
	Link(name string) (netif.LinkInfo, error)
	AddVIP(v netif.VIP) error
	DelVIP(v netif.VIP) error
	// Present reports, for each VIP, whether it is on its interface.
	Present(vips []netif.VIP) ([]bool, error)
	// SweepExcept removes the VIPs the ledger lists, but those keep keeps.
	SweepExcept(l netif.Ledger, keep func(netif.VIP) bool) ([]netif.VIP, error)

	// The sources of adverts: errors wrap netif.ErrNoAddress when there is
	// none.
	PrimaryIPv4(name string, exclude []netip.Addr) (netip.Addr, error)
	LinkLocalIPv6(name string) (netip.Addr, error)
	Tentative(name string, addr netip.Addr) (bool, error)
	// LocalAddrs returns every address configured in the namespace.
	LocalAddrs() (map[netip.Addr]bool, error)

	// WatchLinks and WatchAddrs report changes until ctx is done (see
	// netif.Handle's for what they report, and when).
	WatchLinks(ctx context.Context, f func(name string, up bool)) error
	WatchAddrs(ctx context.Context, f func(p netip.Prefix, added bool)) error
	Close()
}

// Announcer sends gratuitous ARP (IPv4) or unsolicited neighbour
// advertisements (IPv6) for an address out of one interface.
// *announce.Announcer is the real one.
type Announcer interface {
	Announce(addr netip.Addr) error
	Close() error
}

var (
	_ Netlink   = (*netif.Handle)(nil)
	_ Announcer = (*announce.Announcer)(nil)
)

// timedNetlink records the loop's netlink requests that take long, for
// the warning of a slow step (Engine.timed). The watches run outside the
// loop and are not timed.
type timedNetlink struct {
	Netlink
	e *Engine
}

func (t timedNetlink) Link(name string) (l netif.LinkInfo, err error) {
	err = t.e.timed(func() string { return "netlink link " + name }, func() error { l, err = t.Netlink.Link(name); return err })
	return l, err
}

func (t timedNetlink) AddVIP(v netif.VIP) error {
	return t.e.timed(func() string { return "netlink add " + v.String() }, func() error { return t.Netlink.AddVIP(v) })
}

func (t timedNetlink) DelVIP(v netif.VIP) error {
	return t.e.timed(func() string { return "netlink delete " + v.String() }, func() error { return t.Netlink.DelVIP(v) })
}

func (t timedNetlink) Present(vips []netif.VIP) (got []bool, err error) {
	err = t.e.timed(func() string { return fmt.Sprintf("netlink check of %d VIPs", len(vips)) }, func() error { got, err = t.Netlink.Present(vips); return err })
	return got, err
}

func (t timedNetlink) PrimaryIPv4(name string, exclude []netip.Addr) (a netip.Addr, err error) {
	err = t.e.timed(func() string { return "netlink IPv4 source of " + name }, func() error { a, err = t.Netlink.PrimaryIPv4(name, exclude); return err })
	return a, err
}

func (t timedNetlink) LinkLocalIPv6(name string) (a netip.Addr, err error) {
	err = t.e.timed(func() string { return "netlink IPv6 source of " + name }, func() error { a, err = t.Netlink.LinkLocalIPv6(name); return err })
	return a, err
}

func (t timedNetlink) Tentative(name string, addr netip.Addr) (ok bool, err error) {
	err = t.e.timed(func() string { return "netlink DAD state of " + addr.String() }, func() error { ok, err = t.Netlink.Tentative(name, addr); return err })
	return ok, err
}

func (t timedNetlink) LocalAddrs() (m map[netip.Addr]bool, err error) {
	err = t.e.timed(func() string { return "netlink address dump" }, func() error { m, err = t.Netlink.LocalAddrs(); return err })
	return m, err
}

// openNetlink is Options.Netlink, or the real handle.
func (e *Engine) openNetlink() (Netlink, error) {
	if e.opts.Netlink != nil {
		return e.opts.Netlink()
	}
	h, err := netif.Open()
	if err != nil {
		return nil, err
	}
	return h, nil
}

// listen is Options.Listen, or the real socket.
func (e *Engine) listen(family int) (transport.Conn, error) {
	if e.opts.Listen != nil {
		return e.opts.Listen(family)
	}
	return transport.Listen(family)
}

// openAnnouncer is a use of Options.Announcer, or of the real one on the
// interface named name, of index ifIndex, shared with the other instances
// on that interface (see announcers). mac is the interface's hardware
// address when the caller has just read it (nil: it is looked up here).
//
// The interface is looked up by index only to open an announcer: each
// lookup dumps every link of the namespace, and one per instance was 44 MB
// of garbage at the start of 1,000 instances (docs/design/memory.md).
func (e *Engine) openAnnouncer(name string, ifIndex int, mac net.HardwareAddr) (Announcer, error) {
	if e.opts.Announcer != nil {
		return e.announcers.get(annKey{name: name, index: ifIndex}, func() (Announcer, error) { return e.opts.Announcer(name, ifIndex) })
	}
	var ifi *net.Interface
	if mac == nil {
		var err error
		if ifi, err = net.InterfaceByIndex(ifIndex); err != nil {
			return nil, fmt.Errorf("interface %q: %v", name, err)
		}
		mac = ifi.HardwareAddr
	}
	return e.announcers.get(annKey{name: name, index: ifIndex, mac: string(mac)}, func() (Announcer, error) {
		if ifi == nil {
			var err error
			if ifi, err = net.InterfaceByIndex(ifIndex); err != nil {
				return nil, fmt.Errorf("interface %q: %v", name, err)
			}
		}
		a, err := announce.New(ifi)
		if err != nil {
			return nil, fmt.Errorf("announcer: %v", err)
		}
		return a, nil
	})
}

package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/vrrp/transport"
)

// The simulated segment: several engines in this process, each on its own
// simNode (its links, its addresses, its VRRP sockets), joined by one
// in-memory Ethernet segment. Tests run them inside a testing/synctest
// bubble, where time is virtual: timers fire as soon as every goroutine of
// the bubble is blocked, and synctest.Wait returns once the engines have
// handled what was sent. Nothing here needs root or a namespace, and a
// test waiting for a 3-second master-down interval takes microseconds.

// simSegment is the wire. Every node's link named simLinkName is on it.
type simSegment struct {
	mu    sync.Mutex
	nodes []*simNode
	// drop, when set, loses the packets it reports true for.
	drop func(from, to *simNode, p transport.Packet) bool
}

// simLinkName is the interface every node has on the segment.
const simLinkName = "eth0"

type simAddr struct {
	prefix    netip.Prefix
	tentative bool
}

type simLink struct {
	index int
	up    bool
	mac   net.HardwareAddr
	addrs []simAddr // in the order added, as the kernel lists them
	// vmacOf is the parent of a VMAC interface (use_vmac), "" for others.
	vmacOf string
}

// simNode is one node: its netlink side (it implements Netlink), its
// sockets and its announcer.
type simNode struct {
	seg  *simSegment
	name string

	mu        sync.Mutex
	links     map[string]*simLink
	nextIndex int
	conns     map[int]*simConn
	linkW     []chan linkEvent
	addrW     []chan addrEvent
	announced []netip.Addr // GARP / NA sent, in order
	// journal lists the VIP adds and the announcements, in order:
	// "add ADDR", "announce ADDR".
	journal []string
	// addDelay, when set, is how long each AddVIP takes.
	addDelay time.Duration
	// sendErr, when set, fails every VRRP packet the node sends (as an
	// nftables rule dropping them on output makes sendmsg fail, EPERM).
	sendErr error
	// memberships logs the sockets' multicast joins and leaves;
	// notJoined counts the multicast adverts the link did not take, their
	// group not joined.
	memberships []string
	notJoined   int
	// stall, when set, holds the packets the node's sockets read while it
	// is stopped (see simStall).
	stall *simStall
	// sourceLooks counts the looks for an interface's source address
	// (PrimaryIPv4 and LinkLocalIPv6), by "4" and "6": each is an address
	// dump on a real node.
	sourceLooks map[string]int
}

// node adds a node whose eth0 is up on the segment with the given
// addresses (the first IPv4 one is its primary; an IPv6 link-local one is
// added when none is given, as the kernel does).
func (s *simSegment) node(name string, addrs ...string) *simNode {
	n := &simNode{seg: s, name: name, links: map[string]*simLink{}, conns: map[int]*simConn{}, nextIndex: 2}
	n.addLink(simLinkName, addrs...)
	s.mu.Lock()
	s.nodes = append(s.nodes, n)
	s.mu.Unlock()
	return n
}

// addLink creates an interface, up, with addrs, and reports it.
func (n *simNode) addLink(name string, addrs ...string) {
	n.mu.Lock()
	idx := n.nextIndex
	n.nextIndex++
	l := &simLink{index: idx, up: true, mac: net.HardwareAddr{2, 0, 0, 0, byte(len(n.seg.nodes)), byte(idx)}}
	hasLL := false
	for _, a := range addrs {
		p := netip.MustParsePrefix(a)
		hasLL = hasLL || p.Addr().IsLinkLocalUnicast()
		l.addrs = append(l.addrs, simAddr{prefix: p})
	}
	if !hasLL {
		l.addrs = append(l.addrs, simAddr{prefix: netip.PrefixFrom(netip.AddrFrom16([16]byte{0: 0xfe, 1: 0x80, 14: byte(len(n.seg.nodes) + 1), 15: byte(idx)}), 64)})
	}
	n.links[name] = l
	var evs []addrEvent
	for _, a := range l.addrs {
		evs = append(evs, addrEvent{prefix: a.prefix, added: true})
	}
	n.notifyLocked([]linkEvent{{name: name, up: true}}, evs)
	n.mu.Unlock()
}

// setCarrier sets a link's carrier, as a cable or switch port does: the
// link is reported down or up, its addresses stay.
func (n *simNode) setCarrier(name string, up bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l := n.links[name]
	if l.up == up {
		return
	}
	l.up = up
	n.notifyLocked([]linkEvent{{name: name, up: up}}, nil)
}

// announcements returns the addresses the node's announcers sent for, in
// order.
func (n *simNode) announcements() []netip.Addr {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.announced)
}

// delLink deletes a link, as `ip link del` does, in the kernel's order: the
// link is reported down (dev_close), the engines take that in, then its
// addresses go (inetdev_destroy) and the link with them. Called from the
// bubble's test goroutine only.
func (n *simNode) delLink(name string) {
	n.mu.Lock()
	n.links[name].up = false
	n.notifyLocked([]linkEvent{{name: name, up: false}}, nil)
	n.mu.Unlock()
	synctest.Wait()
	n.mu.Lock()
	defer n.mu.Unlock()
	var evs []addrEvent
	for _, a := range n.links[name].addrs {
		evs = append(evs, addrEvent{prefix: a.prefix, added: false})
	}
	delete(n.links, name)
	n.notifyLocked(nil, evs)
}

// ifDown sets a link down as `ip link set dev down` does, in the kernel's
// order: the link is reported down, the engines take that in, then the
// kernel (keep_addr_on_down 0, its default) removes its IPv6 addresses,
// the link-local one too; IPv4 ones stay. Called from the bubble's test
// goroutine only.
func (n *simNode) ifDown(name string) {
	n.mu.Lock()
	l := n.links[name]
	l.up = false
	n.notifyLocked([]linkEvent{{name: name, up: false}}, nil)
	n.mu.Unlock()
	synctest.Wait()
	n.mu.Lock()
	defer n.mu.Unlock()
	var evs []addrEvent
	l.addrs = slices.DeleteFunc(l.addrs, func(a simAddr) bool {
		if a.prefix.Addr().Is6() {
			evs = append(evs, addrEvent{prefix: a.prefix, added: false})
			return true
		}
		return false
	})
	n.notifyLocked(nil, evs)
}

// ifUp sets a link up as `ip link set dev up` does: the kernel adds its
// link-local address ll again, tentative while duplicate address detection
// runs (dad).
func (n *simNode) ifUp(name, ll string, dad bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l := n.links[name]
	l.up = true
	p := netip.MustParsePrefix(ll)
	l.addrs = append(l.addrs, simAddr{prefix: p, tentative: dad})
	n.notifyLocked([]linkEvent{{name: name, up: true}}, []addrEvent{{prefix: p, added: true}})
}

// linkLocal returns the link-local address of a link, with its length.
func (n *simNode) linkLocal(name string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, a := range n.links[name].addrs {
		if a.prefix.Addr().IsLinkLocalUnicast() {
			return a.prefix.String()
		}
	}
	return ""
}

// addAddr adds an address (tentative: IPv6 DAD still running) to a link,
// as `ip addr add` does.
func (n *simNode) addAddr(link, prefix string, tentative bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := netip.MustParsePrefix(prefix)
	l := n.links[link]
	if l.find(p) >= 0 {
		return
	}
	l.addrs = append(l.addrs, simAddr{prefix: p, tentative: tentative})
	n.notifyLocked(nil, []addrEvent{{prefix: p, added: true}})
}

// setTentative ends (or restarts) DAD for an address.
func (n *simNode) setTentative(link, prefix string, tentative bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := netip.MustParsePrefix(prefix)
	l := n.links[link]
	if i := l.find(p); i >= 0 {
		l.addrs[i].tentative = tentative
		n.notifyLocked(nil, []addrEvent{{prefix: p, added: true}})
	}
}

// delAddr removes an address, as `ip addr del` does.
func (n *simNode) delAddr(link, prefix string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.delLocked(link, netip.MustParsePrefix(prefix))
}

func (n *simNode) delLocked(link string, p netip.Prefix) bool {
	l := n.links[link]
	if l == nil {
		return false
	}
	i := l.find(p)
	if i < 0 {
		return false
	}
	l.addrs = slices.Delete(l.addrs, i, i+1)
	n.notifyLocked(nil, []addrEvent{{prefix: p, added: false}})
	return true
}

// has reports whether addr (any length) is on link.
func (n *simNode) has(link string, addr netip.Addr) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	l := n.links[link]
	if l == nil {
		return false
	}
	return slices.ContainsFunc(l.addrs, func(a simAddr) bool { return a.prefix.Addr() == addr })
}

// find returns the index of p: for IPv4 the address with its length, for
// IPv6 the address whatever its length (the kernel keeps one copy).
func (l *simLink) find(p netip.Prefix) int {
	return slices.IndexFunc(l.addrs, func(a simAddr) bool {
		return a.prefix.Addr() == p.Addr() && (p.Addr().Is6() || a.prefix.Bits() == p.Bits())
	})
}

func (n *simNode) notifyLocked(links []linkEvent, addrs []addrEvent) {
	for _, w := range n.linkW {
		for _, ev := range links {
			w <- ev
		}
	}
	for _, w := range n.addrW {
		for _, ev := range addrs {
			w <- ev
		}
	}
}

// Netlink, as the kernel answers it.

func (n *simNode) Link(name string) (netif.LinkInfo, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l := n.links[name]
	if l == nil {
		return netif.LinkInfo{}, fmt.Errorf("link %q: %w", name, netif.ErrNoLink)
	}
	return netif.LinkInfo{Name: name, Index: l.index, Up: l.up, MAC: l.mac, MTU: 1500}, nil
}

func (n *simNode) AddVIP(v netif.VIP) error {
	if err := v.Validate(); err != nil {
		return fmt.Errorf("add VIP: %w", err)
	}
	n.mu.Lock()
	d := n.addDelay
	n.mu.Unlock()
	if d > 0 {
		time.Sleep(d) // the kernel's time per address, in the bubble's virtual time
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.journal = append(n.journal, "add "+v.Prefix.Addr().String())
	l := n.links[v.Dev]
	if l == nil {
		return fmt.Errorf("add VIP %s: link %q: %w", v, v.Dev, netif.ErrNoLink)
	}
	if l.find(v.Prefix) >= 0 {
		return nil
	}
	l.addrs = append(l.addrs, simAddr{prefix: v.Prefix})
	n.notifyLocked(nil, []addrEvent{{prefix: v.Prefix, added: true}})
	return nil
}

func (n *simNode) DelVIP(v netif.VIP) error {
	if err := v.Validate(); err != nil {
		return fmt.Errorf("delete VIP: %w", err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if l := n.links[v.Dev]; l != nil {
		if i := l.find(v.Prefix); i >= 0 && l.addrs[i].prefix.Bits() == v.Prefix.Bits() {
			n.delLocked(v.Dev, v.Prefix)
		}
	}
	return nil
}

func (n *simNode) HasVIP(v netif.VIP) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l := n.links[v.Dev]
	if l == nil {
		return false, nil
	}
	return slices.ContainsFunc(l.addrs, func(a simAddr) bool { return a.prefix == v.Prefix }), nil
}

func (n *simNode) Present(vips []netif.VIP) ([]bool, error) {
	out := make([]bool, len(vips))
	for i, v := range vips {
		out[i], _ = n.HasVIP(v)
	}
	return out, nil
}

// SweepExcept is netif.Handle's, on this node.
func (n *simNode) SweepExcept(l netif.Ledger, keep func(netif.VIP) bool) ([]netif.VIP, error) {
	vips, err := l.Load()
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	var removed, kept []netif.VIP
	for _, v := range vips {
		if keep != nil && keep(v) {
			kept = append(kept, v)
			continue
		}
		if had, _ := n.HasVIP(v); had {
			_ = n.DelVIP(v)
			removed = append(removed, v)
		}
	}
	if len(vips) > 0 {
		if err := l.Save(kept); err != nil {
			return removed, fmt.Errorf("sweep: %w", err)
		}
	}
	return removed, nil
}

func (n *simNode) PrimaryIPv4(name string, exclude []netip.Addr) (netip.Addr, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lookedForSource("4")
	l := n.links[name]
	if l == nil {
		return netip.Addr{}, fmt.Errorf("primary IPv4: link %q: %w", name, netif.ErrNoLink)
	}
	for _, a := range l.addrs {
		if a.prefix.Addr().Is4() && !slices.Contains(exclude, a.prefix.Addr()) {
			return a.prefix.Addr(), nil
		}
	}
	return netip.Addr{}, fmt.Errorf("primary IPv4 of %s: %w (every IPv4 address is excluded, or there is none)", name, netif.ErrNoAddress)
}

func (n *simNode) LinkLocalIPv6(name string) (netip.Addr, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lookedForSource("6")
	l := n.links[name]
	if l == nil {
		return netip.Addr{}, fmt.Errorf("link-local IPv6: link %q: %w", name, netif.ErrNoLink)
	}
	for _, a := range l.addrs {
		if a.prefix.Addr().IsLinkLocalUnicast() && !a.tentative {
			return a.prefix.Addr().WithZone(name), nil
		}
	}
	return netip.Addr{}, fmt.Errorf("link-local IPv6 of %s: %w (none, or still tentative)", name, netif.ErrNoAddress)
}

// lookedForSource counts a look for a source address of family ("4",
// "6"); n.mu is held.
func (n *simNode) lookedForSource(family string) {
	if n.sourceLooks == nil {
		n.sourceLooks = map[string]int{}
	}
	n.sourceLooks[family]++
}

func (n *simNode) Tentative(name string, addr netip.Addr) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l := n.links[name]
	if l == nil {
		return false, fmt.Errorf("tentative %s: link %q: %w", addr, name, netif.ErrNoLink)
	}
	for _, a := range l.addrs {
		if a.prefix.Addr() == addr.WithZone("") {
			return a.tentative, nil
		}
	}
	return true, nil
}

func (n *simNode) LocalAddrs() (map[netip.Addr]bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := map[netip.Addr]bool{}
	for _, l := range n.links {
		for _, a := range l.addrs {
			out[a.prefix.Addr()] = true
		}
	}
	return out, nil
}

// WatchLinks reports every link once, then each change, until ctx is done.
func (n *simNode) WatchLinks(ctx context.Context, f func(name string, up bool)) error {
	ch := make(chan linkEvent, 1024)
	n.mu.Lock()
	for name, l := range n.links {
		ch <- linkEvent{name: name, up: l.up}
	}
	n.linkW = append(n.linkW, ch)
	n.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-ch:
			f(ev.name, ev.up)
		}
	}
}

// WatchAddrs reports the zero prefix, then each change, until ctx is done.
func (n *simNode) WatchAddrs(ctx context.Context, f func(p netip.Prefix, added bool)) error {
	ch := make(chan addrEvent, 1024)
	n.mu.Lock()
	ch <- addrEvent{}
	n.addrW = append(n.addrW, ch)
	n.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-ch:
			f(ev.prefix, ev.added)
		}
	}
}

func (n *simNode) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.linkW, n.addrW = nil, nil
}

// The VMAC side of Netlink (use_vmac), as netif.Handle's: a VMAC is a
// link of its own, with the virtual MAC, no address, up.

func (n *simNode) EnsureVMAC(v netif.VMAC) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.links[v.Parent]; !ok {
		return 0, fmt.Errorf("VMAC %s: parent %s: %w", v.Name, v.Parent, netif.ErrNoLink)
	}
	if l, ok := n.links[v.Name]; ok {
		if l.vmacOf != v.Parent || l.mac.String() != v.MAC.String() {
			return 0, fmt.Errorf("interface %s already exists and is not a private macvlan on %s with MAC %s", v.Name, v.Parent, v.MAC)
		}
		return l.index, nil
	}
	l := &simLink{index: n.nextIndex, up: true, mac: slices.Clone(v.MAC), vmacOf: v.Parent}
	n.nextIndex++
	n.links[v.Name] = l
	n.notifyLocked([]linkEvent{{name: v.Name, up: true}}, nil)
	return l.index, nil
}

func (n *simNode) DeleteVMAC(v netif.VMAC) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	l, ok := n.links[v.Name]
	if !ok {
		return nil
	}
	if l.vmacOf == "" || l.mac.String() != v.MAC.String() {
		return fmt.Errorf("interface %s is not the VMAC (macvlan with MAC %s); left alone", v.Name, v.MAC)
	}
	var evs []addrEvent
	for _, a := range l.addrs {
		evs = append(evs, addrEvent{prefix: a.prefix, added: false})
	}
	delete(n.links, v.Name)
	n.notifyLocked([]linkEvent{{name: v.Name, up: false}}, evs)
	return nil
}

// SweepVMACs is netif.Handle's, on this node.
func (n *simNode) SweepVMACs(l netif.VMACLedger, keep func(netif.VMAC) bool) ([]netif.VMAC, error) {
	vmacs, err := l.Load()
	if err != nil {
		return nil, err
	}
	var kept, removed []netif.VMAC
	var errs []error
	for _, v := range vmacs {
		if keep != nil && keep(v) {
			kept = append(kept, v)
			continue
		}
		if err := n.DeleteVMAC(v); err != nil {
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

// linkMAC returns the MAC address of a link, "" when there is none.
func (n *simNode) linkMAC(name string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l, ok := n.links[name]; ok {
		return l.mac.String()
	}
	return ""
}

// The VRRP sockets.

type simConn struct {
	node   *simNode
	family int
	in     chan transport.Packet
	done   chan struct{}
	once   sync.Once

	mu     sync.Mutex
	joined map[int]map[netip.Addr]bool // the groups joined, by interface

	held atomic.Bool // the reader holds a packet it has not passed on (stalled)
	// sendOnly is a backstop thread's socket: a node stopped whole
	// (simStall.stop) sends nothing on it until it resumes.
	sendOnly bool
}

// Queued reports a packet not passed on yet, as the kernel's queue of a
// raw socket whose reader has not read it: one in the segment's queue,
// or one the reader holds while its node's sockets are stalled.
func (c *simConn) Queued() (bool, error) {
	return len(c.in) > 0 || c.held.Load(), nil
}

func (n *simNode) listen(family int) (transport.Conn, error) {
	c := &simConn{node: n, family: family, in: make(chan transport.Packet, 1024), done: make(chan struct{}), joined: map[int]map[netip.Addr]bool{}}
	n.mu.Lock()
	n.conns[family] = c
	n.mu.Unlock()
	return c, nil
}

// listenSend is a socket that sends on the segment and receives nothing,
// as transport.ListenSend.
func (n *simNode) listenSend(family int) (transport.Conn, error) {
	return &simConn{node: n, family: family, in: make(chan transport.Packet), done: make(chan struct{}), joined: map[int]map[netip.Addr]bool{}, sendOnly: true}, nil
}

func (c *simConn) ReadPacket() (transport.Packet, error) {
	select {
	case p := <-c.in:
		c.node.mu.Lock()
		st := c.node.stall
		c.node.mu.Unlock()
		c.held.Store(true)
		defer c.held.Store(false)
		if st != nil && !st.wait(stallSockets) {
			return transport.Packet{}, net.ErrClosed
		}
		return p, nil
	case <-c.done:
		return transport.Packet{}, net.ErrClosed
	}
}

// WritePacket puts payload on the segment when it leaves by the node's
// segment link and that link is up: every other node whose link is up
// gets it, a multicast only when it joined the group there.
func (c *simConn) WritePacket(payload []byte, src, dst netip.Addr, ifIndex int) error {
	select {
	case <-c.done:
		return net.ErrClosed
	default:
	}
	from := c.node
	from.mu.Lock()
	sendErr, st := from.sendErr, from.stall
	from.mu.Unlock()
	if c.sendOnly && st != nil && st.stoppedWhole() && !st.wait(stallSockets) {
		return net.ErrClosed
	}
	if sendErr != nil {
		return &transport.OpError{Op: "write to " + dst.String(), Family: c.family, Err: sendErr}
	}
	if err := from.usableSource(src); err != nil {
		return &transport.OpError{Op: "write to " + dst.String(), Family: c.family, Err: err}
	}
	if l, err := from.Link(simLinkName); err != nil || l.Index != ifIndex || !l.Up {
		return nil // off the segment, or no carrier: lost
	}
	seg := from.seg
	seg.mu.Lock()
	nodes := slices.Clone(seg.nodes)
	drop := seg.drop
	seg.mu.Unlock()
	for _, to := range nodes {
		if to == from {
			continue // no multicast loopback, as transport sets
		}
		l, err := to.Link(simLinkName)
		if err != nil || !l.Up {
			continue
		}
		to.mu.Lock()
		rc := to.conns[c.family]
		to.mu.Unlock()
		if rc == nil {
			continue
		}
		if dst.IsMulticast() {
			rc.mu.Lock()
			joined := rc.joined[l.Index][dst.WithZone("")]
			rc.mu.Unlock()
			if !joined {
				// The interface's multicast filter drops it.
				to.mu.Lock()
				to.notJoined++
				to.mu.Unlock()
				continue
			}
		} else if local, _ := to.LocalAddrs(); !local[dst.WithZone("")] {
			continue
		}
		p := transport.Packet{Payload: slices.Clone(payload), Src: src.WithZone(""), Dst: dst, TTL: 255, IfIndex: l.Index}
		if drop != nil && drop(from, to, p) {
			continue
		}
		select {
		case rc.in <- p:
		case <-rc.done:
		}
	}
	return nil
}

// failSends makes every VRRP packet the node sends fail with err (nil:
// they leave again).
func (n *simNode) failSends(err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sendErr = err
}

// usableSource is the kernel's check of a packet's source: an address of
// this node (EADDRNOTAVAIL) that is not tentative (EINVAL).
func (n *simNode) usableSource(src netip.Addr) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, l := range n.links {
		for _, a := range l.addrs {
			if a.prefix.Addr() == src.WithZone("") {
				if a.tentative {
					return syscall.EINVAL
				}
				return nil
			}
		}
	}
	return syscall.EADDRNOTAVAIL
}

// deliver hands p to the node's VRRP socket of family as if it had arrived
// on eth0 (a raw packet another host wrote, whatever its TTL or checksum);
// it reports false when the node has no such socket.
func (n *simNode) deliver(family int, p transport.Packet) bool {
	n.mu.Lock()
	c := n.conns[family]
	l := n.links[simLinkName]
	n.mu.Unlock()
	if c == nil || l == nil {
		return false
	}
	p.IfIndex = l.index
	select {
	case c.in <- p:
		return true
	case <-c.done:
		return false
	}
}

// JoinGroup and LeaveGroup keep the socket's memberships, by interface
// and group, and record them in the node's memberships log.
func (c *simConn) JoinGroup(ifIndex int, group netip.Addr) error {
	c.mu.Lock()
	if c.joined[ifIndex] == nil {
		c.joined[ifIndex] = map[netip.Addr]bool{}
	}
	c.joined[ifIndex][group] = true
	c.mu.Unlock()
	c.node.recordMembership(fmt.Sprintf("join %v on %d", group, ifIndex))
	return nil
}

func (c *simConn) LeaveGroup(ifIndex int, group netip.Addr) error {
	c.mu.Lock()
	delete(c.joined[ifIndex], group)
	c.mu.Unlock()
	c.node.recordMembership(fmt.Sprintf("leave %v on %d", group, ifIndex))
	return nil
}

func (n *simNode) recordMembership(what string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.memberships = append(n.memberships, what)
}

// membershipLog returns the joins and leaves of the node's sockets, in
// order, and how many multicast adverts its interface filtered out for
// want of a membership.
func (n *simNode) membershipLog() (log []string, notJoined int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.memberships), n.notJoined
}

func (c *simConn) Close() error {
	c.once.Do(func() { close(c.done) })
	c.node.mu.Lock()
	if c.node.conns[c.family] == c {
		delete(c.node.conns, c.family)
	}
	c.node.mu.Unlock()
	return nil
}

// The announcer records what it sends.

type simAnnouncer struct{ node *simNode }

func (a simAnnouncer) Announce(addr netip.Addr) error {
	a.node.mu.Lock()
	defer a.node.mu.Unlock()
	a.node.announced = append(a.node.announced, addr)
	a.node.journal = append(a.node.journal, "announce "+addr.String())
	return nil
}

func (simAnnouncer) Close() error { return nil }

// options fills the engine's seams with this node's.
func (n *simNode) options(o Options) Options {
	o.Netlink = func() (Netlink, error) { return n, nil }
	o.Listen = n.listen
	o.backstop = &backstopSeams{
		listen: n.listenSend,
		sleep: func(ctx context.Context, d time.Duration) {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
		},
		cpus: func() []int { return []int{0, 1} },
		pin:  func(int) (func() error, error) { return func() error { return nil }, nil },
	}
	o.Announcer = func(string, int) (Announcer, error) { return simAnnouncer{node: n}, nil }
	return o
}

// simEngine builds an engine for n from a keepalived.conf text, with its
// own ledger and a log the test prints when it fails; more set further
// options.
func simEngine(t *testing.T, n *simNode, conf string, hooks *testHooks, more ...func(*Options)) (*Engine, *syncbuf.Buffer) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "keepalived.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	log := new(syncbuf.Buffer)
	o := Options{
		ConfigPath: path,
		Logger:     slog.New(slog.NewTextHandler(log, nil)),
		Ledger:     netif.Ledger{Path: filepath.Join(dir, n.name+".vips")},
		hooks:      hooks,
	}
	for _, f := range more {
		f(&o)
	}
	e, _, err := New(n.options(o))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s's log:\n%s", n.name, log.String())
		}
	})
	return e, log
}

// simRun runs e until the returned stop is called (which waits for Run to
// return); stop runs at cleanup too, if the test did not call it.
func simRun(t *testing.T, e *Engine) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("engine: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// simHolders returns the nodes holding addr on any link.
func simHolders(nodes []*simNode, addr netip.Addr) []*simNode {
	var out []*simNode
	for _, n := range nodes {
		n.mu.Lock()
		for _, l := range n.links {
			if slices.ContainsFunc(l.addrs, func(a simAddr) bool { return a.prefix.Addr() == addr }) {
				out = append(out, n)
				break
			}
		}
		n.mu.Unlock()
	}
	return out
}

// simWaitSole is peers.WaitSoleHolder in virtual time: it lets time pass,
// 20 ms at a time, until want is the only node among nodes holding addr
// and has stayed so for stable; it fails after timeout of virtual time,
// saying who held addr last.
func simWaitSole(t *testing.T, nodes []*simNode, addr netip.Addr, want *simNode, stable, timeout time.Duration, why string) {
	t.Helper()
	start := time.Now()
	var since time.Time
	var last []*simNode
	for time.Since(start) < timeout {
		synctest.Wait()
		last = simHolders(nodes, addr)
		if len(last) == 1 && last[0] == want {
			if since.IsZero() {
				since = time.Now()
			}
			if time.Since(since) >= stable {
				return
			}
		} else {
			since = time.Time{}
		}
		time.Sleep(20 * time.Millisecond)
	}
	var names []string
	for _, n := range last {
		names = append(names, n.name)
	}
	t.Fatalf("%s: after %v, %v is held by %v, want only %s", why, timeout, addr, names, want.name)
}

// simConf renders a peers.Conf (one instance on eth0) for a router.
func simConf(t *testing.T, c peers.Conf, routerID string) string {
	t.Helper()
	text, err := c.Render(routerID)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// simOverPeer runs an engine on high at priority 100 and one on low at 90,
// both with conf, and waits (up to 20 s of virtual time) until high alone
// holds conf's VIP among nodes: startOverKeepalived on the segment, the
// backup an engine. It returns high's engine and log.
func simOverPeer(t *testing.T, nodes []*simNode, high, low *simNode, conf peers.Conf) (*Engine, *syncbuf.Buffer) {
	t.Helper()
	c := conf
	c.Priority = 100
	e, log := simEngine(t, high, simConf(t, c, high.name), nil)
	simRun(t, e)
	c.Priority = 90
	le, _ := simEngine(t, low, simConf(t, c, low.name), nil)
	simRun(t, le)
	simWaitSole(t, nodes, conf.VIP.Addr(), high, 500*time.Millisecond, 20*time.Second, "at start")
	return e, log
}

//go:build linux

package discovery

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sort"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/clock"
)

// goodbyeRepeat is the gap between the two copies of the goodbye packet.
const goodbyeRepeat = 100 * time.Millisecond

// run opens the sockets and drives the engine. Everything that depends on
// the network namespace (interface list, sockets) happens here, on the
// calling goroutine, before any other goroutine starts; so a caller that
// runs Run on a thread switched into a namespace gets the namespace.
func (m *MDNS) run(ctx context.Context, cfg mdnsConfig, update func([]Node)) error {
	ifaces, err := mdnsInterfaces(m.Interface)
	if err != nil {
		return err
	}
	conn, err := listenMDNS(ifaces)
	if err != nil {
		return err
	}
	defer conn.close()
	clk := m.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	var seed [16]byte
	if _, err := crand.Read(seed[:]); err != nil {
		return fmt.Errorf("mdns: seed: %w", err)
	}
	eng := newMDNSEngine(cfg, rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:]))))
	names := make([]string, len(ifaces))
	for i, ifi := range ifaces {
		names[i] = ifi.Name
	}
	cfg.log.Info("mdns: starting", "interfaces", names, "host", eng.host, "instance", eng.instance,
		"addrs", cfg.self.Addrs, "ttl", cfg.ttl, "ipv4", conn.v4 != nil, "ipv6", conn.v6 != nil)

	in := make(chan inPacket, 256)
	done := make(chan struct{})
	defer close(done)
	if conn.v4 != nil {
		go conn.read(in, done, cfg, func(b []byte) (int, int, net.IP, net.Addr, error) {
			n, cm, from, err := conn.v4.ReadFrom(b)
			if cm == nil {
				return n, 0, nil, from, err
			}
			return n, cm.IfIndex, cm.Dst, from, err
		})
	}
	if conn.v6 != nil {
		go conn.read(in, done, cfg, func(b []byte) (int, int, net.IP, net.Addr, error) {
			n, cm, from, err := conn.v6.ReadFrom(b)
			if cm == nil {
				return n, 0, nil, from, err
			}
			return n, cm.IfIndex, cm.Dst, from, err
		})
	}

	var last []Node
	report := func() {
		nodes := eng.nodes()
		if last != nil && equalNodes(last, nodes) {
			return
		}
		logChanges(cfg, last, nodes)
		last = nodes
		update(nodes)
	}
	conn.sendAll(eng.start(clk.Now()), cfg)
	report()
	timer := clk.NewTimer(time.Hour)
	defer timer.Stop()
	arm := func() {
		d := time.Hour
		if next := eng.next(); !next.IsZero() {
			d = max(next.Sub(clk.Now()), 0)
		}
		timer.Reset(d)
	}
	arm()
	for {
		select {
		case <-ctx.Done():
			bye := eng.stop()
			if len(bye) > 0 {
				conn.sendAll(bye, cfg)
				t := clk.NewTimer(goodbyeRepeat)
				<-t.C()
				conn.sendAll(bye, cfg)
				cfg.log.Info("mdns: sent goodbye")
			}
			return nil
		case p := <-in:
			if !conn.ifIndex[p.ifIndex] {
				continue
			}
			if fromOffLink(p.from.Addr(), p.dst, conn.prefixes(p.ifIndex, p.dst, clk.Now())) {
				cfg.log.Debug("mdns: dropping a datagram from off the link (RFC 6762 section 11)", "from", p.from, "to", p.dst)
				continue
			}
			conn.sendAll(eng.receive(clk.Now(), p), cfg)
		case <-timer.C():
			conn.sendAll(eng.tick(clk.Now()), cfg)
		case err := <-conn.failed:
			return err
		}
		report()
		arm()
	}
}

func logChanges(cfg mdnsConfig, old, cur []Node) {
	had := map[string]Node{}
	for _, n := range old {
		had[n.Name] = n
	}
	for _, n := range cur {
		if o, ok := had[n.Name]; !ok {
			cfg.log.Info("mdns: node joined", "name", n.Name, "role", n.Role, "addrs", n.Addrs)
		} else if !equalNodes([]Node{o}, []Node{n}) {
			cfg.log.Info("mdns: node changed", "name", n.Name, "role", n.Role, "addrs", n.Addrs)
		}
		delete(had, n.Name)
	}
	for _, n := range had {
		cfg.log.Info("mdns: node left", "name", n.Name)
	}
}

// mdnsInterfaces returns the named interface, or every interface that is up,
// multicast-capable and not loopback.
func mdnsInterfaces(name string) ([]net.Interface, error) {
	if name != "" {
		ifi, err := net.InterfaceByName(name)
		if err != nil {
			return nil, fmt.Errorf("mdns: Interface %q: %w", name, err)
		}
		if ifi.Flags&net.FlagUp == 0 || ifi.Flags&net.FlagMulticast == 0 {
			return nil, fmt.Errorf("mdns: Interface %q is %v; want an interface that is up and multicast-capable", name, ifi.Flags)
		}
		return []net.Interface{*ifi}, nil
	}
	all, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("mdns: list interfaces: %w", err)
	}
	var out []net.Interface
	for _, ifi := range all {
		if ifi.Flags&net.FlagUp != 0 && ifi.Flags&net.FlagMulticast != 0 && ifi.Flags&net.FlagLoopback == 0 {
			out = append(out, ifi)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("mdns: Interface \"\": no interface is up, multicast-capable and not loopback; name one that is")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

type mdnsConn struct {
	v4      *ipv4.PacketConn
	v6      *ipv6.PacketConn
	ifaces  []net.Interface
	ifIndex map[int]bool
	failed  chan error
	// onLink caches each interface's prefixes for prefixes, a second.
	onLink map[int]ifPrefixes
}

type ifPrefixes struct {
	at       time.Time
	prefixes []netip.Prefix
}

// prefixes returns the prefixes of interface ifIndex's addresses, for
// fromOffLink, read again when the cache is a second old: only a datagram
// sent to a unicast address needs them (dst multicast: nil, unread), and a
// host flooding those costs a read of the interface's addresses a second,
// not one a datagram.
func (c *mdnsConn) prefixes(ifIndex int, dst netip.Addr, now time.Time) []netip.Prefix {
	if !dst.IsValid() || dst.IsMulticast() {
		return nil
	}
	if e, ok := c.onLink[ifIndex]; ok && now.Sub(e.at) < time.Second && !now.Before(e.at) {
		return e.prefixes
	}
	var out []netip.Prefix
	if ifi, err := net.InterfaceByIndex(ifIndex); err == nil {
		if addrs, err := ifi.Addrs(); err == nil {
			for _, a := range addrs {
				n, ok := a.(*net.IPNet)
				if !ok {
					continue
				}
				ip, ok := netip.AddrFromSlice(n.IP)
				ones, _ := n.Mask.Size()
				if !ok {
					continue
				}
				ip = ip.Unmap()
				if ip.Is4() && ones > 32 {
					ones -= 96
				}
				if p, err := ip.Prefix(ones); err == nil {
					out = append(out, p)
				}
			}
		}
	}
	if c.onLink == nil {
		c.onLink = map[int]ifPrefixes{}
	}
	c.onLink[ifIndex] = ifPrefixes{at: now, prefixes: out}
	return out
}

// listenMDNS binds UDP port 5353 for IPv4 and IPv6 and joins the mDNS
// groups on ifaces. SO_REUSEADDR/SO_REUSEPORT let it share the port with
// another responder on the same host (avahi). IP_MULTICAST_ALL is off so
// only the groups joined on ifaces arrive. One family failing (IPv6
// disabled, say) is tolerated; both failing is an error.
func listenMDNS(ifaces []net.Interface) (*mdnsConn, error) {
	c := &mdnsConn{ifaces: ifaces, ifIndex: map[int]bool{}, failed: make(chan error, 2)}
	for _, ifi := range ifaces {
		c.ifIndex[ifi.Index] = true
	}
	lc := net.ListenConfig{Control: func(network, address string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			for _, o := range []int{unix.SO_REUSEADDR, unix.SO_REUSEPORT} {
				if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, o, 1); serr != nil {
					return
				}
			}
			if network == "udp4" {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MULTICAST_ALL, 0)
			} else {
				_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_ALL, 0) // Linux >= 4.20
			}
		})
		if err != nil {
			return err
		}
		return serr
	}}
	var errs []error
	if pc, err := lc.ListenPacket(context.Background(), "udp4", fmt.Sprintf("0.0.0.0:%d", mdnsPort)); err != nil {
		errs = append(errs, fmt.Errorf("listen udp4 :%d: %w", mdnsPort, err))
	} else {
		p := ipv4.NewPacketConn(pc)
		err := errors.Join(p.SetControlMessage(ipv4.FlagInterface|ipv4.FlagDst, true), p.SetMulticastTTL(255), p.SetTTL(255), p.SetMulticastLoopback(true))
		joined := 0
		for i := range ifaces {
			if jerr := p.JoinGroup(&ifaces[i], &net.UDPAddr{IP: mdnsGroup4.Addr().AsSlice()}); jerr == nil {
				joined++
			} else {
				errs = append(errs, fmt.Errorf("join %v on %s: %w", mdnsGroup4.Addr(), ifaces[i].Name, jerr))
			}
		}
		if err != nil || joined == 0 {
			errs = append(errs, err)
			_ = p.Close()
		} else {
			c.v4 = p
		}
	}
	if pc, err := lc.ListenPacket(context.Background(), "udp6", fmt.Sprintf("[::]:%d", mdnsPort)); err != nil {
		errs = append(errs, fmt.Errorf("listen udp6 :%d: %w", mdnsPort, err))
	} else {
		p := ipv6.NewPacketConn(pc)
		err := errors.Join(p.SetControlMessage(ipv6.FlagInterface|ipv6.FlagDst, true), p.SetMulticastHopLimit(255), p.SetHopLimit(255), p.SetMulticastLoopback(true))
		joined := 0
		for i := range ifaces {
			if jerr := p.JoinGroup(&ifaces[i], &net.UDPAddr{IP: mdnsGroup6.Addr().AsSlice()}); jerr == nil {
				joined++
			} else {
				errs = append(errs, fmt.Errorf("join %v on %s: %w", mdnsGroup6.Addr(), ifaces[i].Name, jerr))
			}
		}
		if err != nil || joined == 0 {
			errs = append(errs, err)
			_ = p.Close()
		} else {
			c.v6 = p
		}
	}
	if c.v4 == nil && c.v6 == nil {
		return nil, fmt.Errorf("mdns: no usable socket: %w", errors.Join(errs...))
	}
	return c, nil
}

func (c *mdnsConn) close() {
	if c.v4 != nil {
		_ = c.v4.Close()
	}
	if c.v6 != nil {
		_ = c.v6.Close()
	}
}

// read copies datagrams into in until the socket is closed.
func (c *mdnsConn) read(in chan<- inPacket, done <-chan struct{}, cfg mdnsConfig, readFrom func([]byte) (int, int, net.IP, net.Addr, error)) {
	buf := make([]byte, 9000) // RFC 6762 section 17
	for {
		n, ifIndex, dstIP, from, err := readFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case c.failed <- fmt.Errorf("mdns: read: %w", err):
			default:
			}
			return
		}
		ua, ok := from.(*net.UDPAddr)
		if !ok {
			continue
		}
		ap := ua.AddrPort()
		dst, _ := netip.AddrFromSlice(dstIP)
		p := inPacket{data: append([]byte(nil), buf[:n]...), from: netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), dst: dst.Unmap(), ifIndex: ifIndex}
		select {
		case in <- p:
		case <-done:
			return
		default:
			cfg.log.Debug("mdns: receive queue full, dropping a packet", "from", ap)
		}
	}
}

// sendAll sends packets; a failure on one interface is logged, not fatal
// (an interface may be down for a moment).
func (c *mdnsConn) sendAll(ps []outPacket, cfg mdnsConfig) {
	for _, p := range ps {
		p.msg.Compress = true
		b, err := p.msg.Pack()
		if err != nil {
			cfg.log.Error("mdns: pack", "err", err)
			continue
		}
		if p.to.IsValid() {
			if err := c.write(b, p.ifIndex, p.src, p.to); err != nil {
				cfg.log.Debug("mdns: send", "to", p.to, "err", err)
			}
			continue
		}
		for _, ifi := range c.ifaces {
			if p.ifIndex != 0 && p.ifIndex != ifi.Index {
				continue
			}
			for _, g := range []netip.AddrPort{mdnsGroup4, mdnsGroup6} {
				if p.family == 4 && !g.Addr().Is4() || p.family == 6 && g.Addr().Is4() {
					continue
				}
				if err := c.write(b, ifi.Index, netip.Addr{}, g); err != nil {
					cfg.log.Debug("mdns: send", "to", g, "interface", ifi.Name, "err", err)
				}
			}
		}
	}
}

// write sends b to to through ifIndex, from src if it is valid.
func (c *mdnsConn) write(b []byte, ifIndex int, src netip.Addr, to netip.AddrPort) error {
	ua := net.UDPAddrFromAddrPort(to)
	var srcIP net.IP
	if src.IsValid() && src.Is4() == to.Addr().Is4() {
		srcIP = src.AsSlice()
	}
	if to.Addr().Is4() {
		if c.v4 == nil {
			return errors.New("no IPv4 socket")
		}
		_, err := c.v4.WriteTo(b, &ipv4.ControlMessage{IfIndex: ifIndex, Src: srcIP}, ua)
		return err
	}
	if c.v6 == nil {
		return errors.New("no IPv6 socket")
	}
	_, err := c.v6.WriteTo(b, &ipv6.ControlMessage{IfIndex: ifIndex, Src: srcIP}, ua)
	return err
}

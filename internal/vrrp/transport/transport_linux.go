//go:build linux

package transport

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

const (
	protocol = 112
	tos      = 0xc0 // DSCP CS6, as keepalived sends
	maxTTL   = 255
	// bufSize holds any IP packet (and any IPv6 payload without jumbo
	// options), so nothing is cut short: a VRRPv3 IPv6 advert with 255
	// addresses is 4,088 bytes, more than a 1,500-byte MTU but not more
	// than a jumbo frame.
	bufSize = 1 << 16
)

// Listen opens the raw VRRP socket for family 4 or 6 in the current network
// namespace. It needs CAP_NET_RAW.
func Listen(family int) (Conn, error) {
	switch family {
	case 4:
		return listen4()
	case 6:
		return listen6()
	}
	return nil, fmt.Errorf("vrrp transport: address family %d, want 4 or 6", family)
}

type conn4 struct {
	pc  net.PacketConn
	raw *ipv4.RawConn
	mu  sync.Mutex // serialises writes

	rmu sync.Mutex // serialises reads of buf
	buf []byte
}

func listen4() (*conn4, error) {
	pc, err := net.ListenPacket("ip4:112", "0.0.0.0")
	if err != nil {
		return nil, &OpError{Op: "listen", Family: 4, Err: err}
	}
	growReadBuffer(pc)
	raw, err := ipv4.NewRawConn(pc)
	if err != nil {
		pc.Close()
		return nil, &OpError{Op: "raw socket", Family: 4, Err: err}
	}
	if err := raw.SetControlMessage(ipv4.FlagTTL|ipv4.FlagDst|ipv4.FlagInterface, true); err != nil {
		pc.Close()
		return nil, &OpError{Op: "set control messages", Family: 4, Err: err}
	}
	// Our own multicast adverts must not come back to us.
	if err := raw.SetMulticastLoopback(false); err != nil {
		pc.Close()
		return nil, &OpError{Op: "disable multicast loopback", Family: 4, Err: err}
	}
	return &conn4{pc: pc, raw: raw, buf: make([]byte, bufSize)}, nil
}

func (c *conn4) ReadPacket() (Packet, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	buf := c.buf
	for {
		h, payload, cm, err := c.raw.ReadFrom(buf)
		if err != nil {
			return Packet{}, &OpError{Op: "read", Family: 4, Err: err}
		}
		if h == nil || h.Protocol != protocol {
			continue
		}
		p := Packet{Payload: append([]byte(nil), payload...), TTL: h.TTL}
		p.Src, _ = netip.AddrFromSlice(h.Src.To4())
		p.Dst, _ = netip.AddrFromSlice(h.Dst.To4())
		if cm != nil {
			p.IfIndex = cm.IfIndex
		}
		return p, nil
	}
}

func (c *conn4) WritePacket(payload []byte, src, dst netip.Addr, ifIndex int) error {
	if !src.Is4() || !dst.Is4() {
		return &OpError{Op: "write", Family: 4, Err: fmt.Errorf("addresses %v -> %v are not IPv4", src, dst)}
	}
	h := &ipv4.Header{
		Version:  ipv4.Version,
		Len:      ipv4.HeaderLen,
		TOS:      tos,
		TotalLen: ipv4.HeaderLen + len(payload),
		TTL:      maxTTL,
		Protocol: protocol,
		Src:      src.AsSlice(),
		Dst:      dst.AsSlice(),
	}
	cm := &ipv4.ControlMessage{IfIndex: ifIndex}
	c.mu.Lock()
	defer c.mu.Unlock()
	if dst.IsMulticast() {
		// On Linux IP_MULTICAST_IF takes an ip_mreqn, of which x/net
		// fills in the index alone: no lookup by index, which dumped every
		// link of the node over netlink for each advertisement (half the
		// engine's CPU at rest with 1,000 instances, bench/scale). A link
		// that is gone fails here with ENODEV instead.
		ifi := &net.Interface{Index: ifIndex}
		if err := c.raw.SetMulticastInterface(ifi); err != nil {
			return &OpError{Op: "set multicast interface", Family: 4, Err: err}
		}
		cm = nil
	}
	if err := c.raw.WriteTo(h, payload, cm); err != nil {
		return &OpError{Op: "write to " + dst.String(), Family: 4, Err: err}
	}
	return nil
}

func (c *conn4) JoinGroup(ifIndex int, group netip.Addr) error {
	ifi, err := groupIf(ifIndex, group, 4, "join")
	if err != nil {
		return err
	}
	if err := c.raw.JoinGroup(ifi, &net.IPAddr{IP: group.AsSlice()}); err != nil && !isAlready(err) {
		return &OpError{Op: "join " + group.String() + " on " + ifi.Name, Family: 4, Err: err}
	}
	return nil
}

func (c *conn4) LeaveGroup(ifIndex int, group netip.Addr) error {
	ifi, err := groupIf(ifIndex, group, 4, "leave")
	if err != nil {
		return err
	}
	if err := c.raw.LeaveGroup(ifi, &net.IPAddr{IP: group.AsSlice()}); err != nil {
		return &OpError{Op: "leave " + group.String() + " on " + ifi.Name, Family: 4, Err: err}
	}
	return nil
}

// groupIf checks that group is a multicast address of family and returns
// the interface ifIndex.
func groupIf(ifIndex int, group netip.Addr, family int, op string) (*net.Interface, error) {
	if !group.IsMulticast() || (family == 4) != group.Is4() {
		return nil, &OpError{Op: op + " group", Family: family, Err: fmt.Errorf("%v is not an IPv%d multicast address", group, family)}
	}
	ifi, err := net.InterfaceByIndex(ifIndex)
	if err != nil {
		return nil, &OpError{Op: op + " group " + group.String(), Family: family, Err: err}
	}
	return ifi, nil
}

func (c *conn4) Close() error { return c.pc.Close() }

type conn6 struct {
	pc    net.PacketConn
	p     *ipv6.PacketConn
	mu    sync.Mutex
	zones map[int]string // interface names by index (see zone); guarded by mu

	rmu sync.Mutex // serialises reads of buf
	buf []byte
}

func listen6() (*conn6, error) {
	pc, err := net.ListenPacket("ip6:112", "::")
	if err != nil {
		return nil, &OpError{Op: "listen", Family: 6, Err: err}
	}
	growReadBuffer(pc)
	p := ipv6.NewPacketConn(pc)
	steps := []struct {
		op string
		f  func() error
	}{
		{"set control messages", func() error {
			return p.SetControlMessage(ipv6.FlagHopLimit|ipv6.FlagDst|ipv6.FlagInterface, true)
		}},
		{"set hop limit", func() error { return p.SetHopLimit(maxTTL) }},
		{"set multicast hop limit", func() error { return p.SetMulticastHopLimit(maxTTL) }},
		{"set traffic class", func() error { return p.SetTrafficClass(tos) }},
		{"disable multicast loopback", func() error { return p.SetMulticastLoopback(false) }},
	}
	for _, s := range steps {
		if err := s.f(); err != nil {
			pc.Close()
			return nil, &OpError{Op: s.op, Family: 6, Err: err}
		}
	}
	return &conn6{pc: pc, p: p, buf: make([]byte, bufSize)}, nil
}

func (c *conn6) ReadPacket() (Packet, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	n, cm, src, err := c.p.ReadFrom(c.buf)
	if err != nil {
		return Packet{}, &OpError{Op: "read", Family: 6, Err: err}
	}
	p := Packet{Payload: append([]byte(nil), c.buf[:n]...), TTL: -1}
	if ia, ok := src.(*net.IPAddr); ok {
		p.Src, _ = netip.AddrFromSlice(ia.IP)
		p.Src = p.Src.Unmap()
	}
	if cm != nil {
		p.TTL = cm.HopLimit
		p.IfIndex = cm.IfIndex
		p.Dst, _ = netip.AddrFromSlice(cm.Dst)
	}
	return p, nil
}

func (c *conn6) WritePacket(payload []byte, src, dst netip.Addr, ifIndex int) error {
	if !src.Is6() || !dst.Is6() {
		return &OpError{Op: "write", Family: 6, Err: fmt.Errorf("addresses %v -> %v are not IPv6", src, dst)}
	}
	cm := &ipv6.ControlMessage{Src: src.AsSlice(), IfIndex: ifIndex, HopLimit: maxTTL, TrafficClass: tos}
	c.mu.Lock()
	defer c.mu.Unlock()
	zone := ""
	if dst.IsLinkLocalUnicast() || dst.IsLinkLocalMulticast() || dst.IsInterfaceLocalMulticast() {
		zone = c.zone(ifIndex)
	}
	if _, err := c.p.WriteTo(payload, cm, &net.IPAddr{IP: dst.AsSlice(), Zone: zone}); err != nil {
		delete(c.zones, ifIndex) // the link may have been renamed or replaced
		return &OpError{Op: "write to " + dst.String(), Family: 6, Err: err}
	}
	return nil
}

// zone is the name of interface ifIndex, looked up once (net.InterfaceByIndex
// dumps every link of the node) and forgotten after a failed write; "" when
// it cannot be found. c.mu must be held.
func (c *conn6) zone(ifIndex int) string {
	if name, ok := c.zones[ifIndex]; ok {
		return name
	}
	ifi, err := net.InterfaceByIndex(ifIndex)
	if err != nil {
		return ""
	}
	if c.zones == nil {
		c.zones = map[int]string{}
	}
	c.zones[ifIndex] = ifi.Name
	return ifi.Name
}

func (c *conn6) JoinGroup(ifIndex int, group netip.Addr) error {
	ifi, err := groupIf(ifIndex, group, 6, "join")
	if err != nil {
		return err
	}
	if err := c.p.JoinGroup(ifi, &net.IPAddr{IP: group.AsSlice()}); err != nil && !isAlready(err) {
		return &OpError{Op: "join " + group.String() + " on " + ifi.Name, Family: 6, Err: err}
	}
	return nil
}

func (c *conn6) LeaveGroup(ifIndex int, group netip.Addr) error {
	ifi, err := groupIf(ifIndex, group, 6, "leave")
	if err != nil {
		return err
	}
	if err := c.p.LeaveGroup(ifi, &net.IPAddr{IP: group.AsSlice()}); err != nil {
		return &OpError{Op: "leave " + group.String() + " on " + ifi.Name, Family: 6, Err: err}
	}
	return nil
}

func (c *conn6) Close() error { return c.pc.Close() }

func isAlready(err error) bool { return errors.Is(err, syscall.EADDRINUSE) }

// readBuffer is the receive buffer asked for each raw socket: room for
// about a second of a 20,000 packet/s flood of bogus protocol-112 packets,
// so the real adverts behind them are not dropped by the kernel while the
// engine screens the flood (the default, net.core.rmem_default, holds a
// few hundred).
const readBuffer = 4 << 20

// growReadBuffer sets the socket's receive buffer to readBuffer, past
// net.core.rmem_max with CAP_NET_ADMIN (SO_RCVBUFFORCE), else as far as
// rmem_max allows. A failure keeps the default: the socket still works.
func growReadBuffer(pc net.PacketConn) {
	sc, ok := pc.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		if syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, readBuffer) != nil {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, readBuffer)
		}
	})
}

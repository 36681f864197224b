//go:build linux

package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"unsafe"

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

	mu sync.Mutex // serialises writes and guards w
	w  *send4

	rmu    sync.Mutex // serialises reads, guards r
	r      *recv
	copies copyReader // ReadPacket's
}

// send4 is what one IPv4 write needs, kept with the socket so that a write
// allocates nothing: x/net's RawConn.WriteTo marshalled the header, a
// sockaddr and the control message anew for every advertisement (a
// thousand a second with 1,000 masters, docs/design/memory.md). Guarded by
// conn4.mu.
type send4 struct {
	rc    syscall.RawConn
	do    func(fd uintptr) bool // send, made once (a method value allocates)
	pkt   []byte                // IP header and payload
	to    syscall.SockaddrInet4
	oob   []byte // IP_PKTINFO naming the interface, for unicast
	mreqn syscall.IPMreqn
	mcast bool   // set IP_MULTICAST_IF (mreqn) and send without oob
	op    string // the call that failed: "setsockopt" (IP_MULTICAST_IF) or "sendmsg"
	err   error
}

func newSend4(pc net.PacketConn) (*send4, error) {
	rc, err := rawConn(pc)
	if err != nil {
		return nil, err
	}
	w := &send4{rc: rc, pkt: make([]byte, 0, ipv4.HeaderLen+256), oob: make([]byte, syscall.CmsgSpace(syscall.SizeofInet4Pktinfo))}
	w.do = w.send
	return w, nil
}

// send is the RawConn.Write callback: false asks to wait until the socket
// is writable (EAGAIN) and try again.
func (w *send4) send(fd uintptr) bool {
	w.op, w.err = "", nil
	if w.mcast {
		if err := syscall.SetsockoptIPMreqn(int(fd), syscall.IPPROTO_IP, syscall.IP_MULTICAST_IF, &w.mreqn); err != nil {
			w.op, w.err = "setsockopt", err
			return true
		}
		w.err = syscall.Sendto(int(fd), w.pkt, 0, &w.to)
	} else {
		_, w.err = syscall.SendmsgN(int(fd), w.pkt, w.oob, &w.to, 0)
	}
	if w.err == syscall.EAGAIN {
		return false
	}
	w.op = "sendmsg"
	return true
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
	w, err := newSend4(pc)
	if err != nil {
		pc.Close()
		return nil, &OpError{Op: "raw socket", Family: 4, Err: err}
	}
	r, err := newRecv(pc)
	if err != nil {
		pc.Close()
		return nil, &OpError{Op: "raw socket", Family: 4, Err: err}
	}
	return &conn4{pc: pc, raw: raw, w: w, r: r}, nil
}

func (c *conn4) ReadPacket() (Packet, error) { return c.copies.read(c.ReadPacketInto) }

func (c *conn4) WritePacket(payload []byte, src, dst netip.Addr, ifIndex int) error {
	if !src.Is4() || !dst.Is4() {
		return &OpError{Op: "write", Family: 4, Err: fmt.Errorf("addresses %v -> %v are not IPv4", src, dst)}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.w
	// The header x/net's ipv4.Header.Marshal wrote on Linux: no options,
	// ID, fragment offset and checksum zero (the kernel fills in the ID and
	// the checksum of an IP_HDRINCL packet), the total length big-endian.
	w.pkt = append(w.pkt[:0], ipv4.Version<<4|ipv4.HeaderLen>>2, tos, 0, 0, 0, 0, 0, 0, maxTTL, protocol, 0, 0)
	binary.BigEndian.PutUint16(w.pkt[2:], uint16(ipv4.HeaderLen+len(payload)))
	s4, d4 := src.As4(), dst.As4()
	w.pkt = append(append(append(w.pkt, s4[:]...), d4[:]...), payload...)
	w.to.Addr = d4
	// On Linux IP_MULTICAST_IF takes an ip_mreqn, of which the index alone
	// is filled in: no lookup by index, which dumped every link of the
	// node over netlink for each advertisement (half the engine's CPU at
	// rest with 1,000 instances, bench/scale). A link that is gone fails
	// there instead (EADDRNOTAVAIL for an index that names none,
	// TestPacketIOAllocs). Unicast names the interface in an IP_PKTINFO
	// control message.
	w.mcast = dst.IsMulticast()
	if w.mcast {
		w.mreqn = syscall.IPMreqn{Ifindex: int32(ifIndex)}
	} else {
		putPktinfo4(w.oob, ifIndex)
	}
	if err := w.rc.Write(w.do); err != nil {
		return &OpError{Op: "write to " + dst.String(), Family: 4, Err: err}
	}
	if w.err != nil {
		if w.op == "setsockopt" {
			return &OpError{Op: "set multicast interface", Family: 4, Err: os.NewSyscallError(w.op, w.err)}
		}
		return &OpError{Op: "write to " + dst.String(), Family: 4, Err: os.NewSyscallError(w.op, w.err)}
	}
	return nil
}

// putPktinfo4 writes into oob (CmsgSpace(SizeofInet4Pktinfo) bytes) an
// IP_PKTINFO control message naming interface ifIndex, as x/net's
// ipv4.ControlMessage{IfIndex: ifIndex} did.
func putPktinfo4(oob []byte, ifIndex int) {
	clear(oob)
	h := (*syscall.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level, h.Type = syscall.IPPROTO_IP, syscall.IP_PKTINFO
	h.SetLen(syscall.CmsgLen(syscall.SizeofInet4Pktinfo))
	pi := (*syscall.Inet4Pktinfo)(unsafe.Pointer(&oob[syscall.CmsgLen(0)]))
	pi.Ifindex = int32(ifIndex)
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
	pc net.PacketConn
	p  *ipv6.PacketConn

	mu sync.Mutex // serialises writes and guards w
	w  *send6

	rmu    sync.Mutex // serialises reads, guards r
	r      *recv
	copies copyReader // ReadPacket's
}

// send6 is what one IPv6 write needs, kept with the socket so that a write
// allocates nothing (see send4). Guarded by conn6.mu.
type send6 struct {
	rc      syscall.RawConn
	do      func(fd uintptr) bool // send, made once
	payload []byte                // the caller's, for the length of one write
	to      syscall.SockaddrInet6
	// oob holds the control messages x/net's ipv6.ControlMessage{Src,
	// IfIndex, HopLimit, TrafficClass} marshalled, in its order:
	// IPV6_TCLASS, IPV6_HOPLIMIT, IPV6_PKTINFO.
	oob []byte
	err error
}

func newSend6(pc net.PacketConn) (*send6, error) {
	rc, err := rawConn(pc)
	if err != nil {
		return nil, err
	}
	intSpace := syscall.CmsgSpace(4)
	w := &send6{rc: rc, oob: make([]byte, 2*intSpace+syscall.CmsgSpace(syscall.SizeofInet6Pktinfo))}
	putCmsgInt(w.oob, syscall.IPV6_TCLASS, tos)
	putCmsgInt(w.oob[intSpace:], syscall.IPV6_HOPLIMIT, maxTTL)
	h := (*syscall.Cmsghdr)(unsafe.Pointer(&w.oob[2*intSpace]))
	h.Level, h.Type = syscall.IPPROTO_IPV6, syscall.IPV6_PKTINFO
	h.SetLen(syscall.CmsgLen(syscall.SizeofInet6Pktinfo))
	w.do = w.send
	return w, nil
}

// putCmsgInt writes an IPPROTO_IPV6 control message of type typ holding
// the int v at the start of b.
func putCmsgInt(b []byte, typ int32, v int32) {
	h := (*syscall.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = syscall.IPPROTO_IPV6, typ
	h.SetLen(syscall.CmsgLen(4))
	binary.NativeEndian.PutUint32(b[syscall.CmsgLen(0):], uint32(v))
}

// pktinfo is the IPV6_PKTINFO control message's data in w.oob.
func (w *send6) pktinfo() *syscall.Inet6Pktinfo {
	at := 2*syscall.CmsgSpace(4) + syscall.CmsgLen(0)
	return (*syscall.Inet6Pktinfo)(unsafe.Pointer(&w.oob[at]))
}

// send is the RawConn.Write callback (see send4.send).
func (w *send6) send(fd uintptr) bool {
	_, w.err = syscall.SendmsgN(int(fd), w.payload, w.oob, &w.to, 0)
	return w.err != syscall.EAGAIN
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
	w, err := newSend6(pc)
	if err != nil {
		pc.Close()
		return nil, &OpError{Op: "raw socket", Family: 6, Err: err}
	}
	r, err := newRecv(pc)
	if err != nil {
		pc.Close()
		return nil, &OpError{Op: "raw socket", Family: 6, Err: err}
	}
	return &conn6{pc: pc, p: p, w: w, r: r}, nil
}

func (c *conn6) ReadPacket() (Packet, error) { return c.copies.read(c.ReadPacketInto) }

func (c *conn6) WritePacket(payload []byte, src, dst netip.Addr, ifIndex int) error {
	if !src.Is6() || !dst.Is6() {
		return &OpError{Op: "write", Family: 6, Err: fmt.Errorf("addresses %v -> %v are not IPv6", src, dst)}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.w
	pi := w.pktinfo()
	pi.Addr, pi.Ifindex = src.As16(), uint32(ifIndex)
	// A link-scoped destination carries the interface as its zone, by
	// index: x/net took the interface's name (looked up by index, a dump
	// of every link) and the net package turned it back into the index.
	w.to.Addr, w.to.ZoneId = dst.As16(), 0
	if dst.IsLinkLocalUnicast() || dst.IsLinkLocalMulticast() || dst.IsInterfaceLocalMulticast() {
		w.to.ZoneId = uint32(ifIndex)
	}
	w.payload = payload
	err := w.rc.Write(w.do)
	w.payload = nil // the caller's buffer is theirs again
	if err == nil && w.err != nil {
		err = os.NewSyscallError("sendmsg", w.err)
	}
	if err != nil {
		return &OpError{Op: "write to " + dst.String(), Family: 6, Err: err}
	}
	return nil
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
	rc, err := rawConn(pc)
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		if syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, readBuffer) != nil {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, readBuffer)
		}
	})
}

// rawConn is pc's file descriptor, for the system calls x/net does not make.
func rawConn(pc net.PacketConn) (syscall.RawConn, error) {
	sc, ok := pc.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("%T has no file descriptor", pc)
	}
	return sc.SyscallConn()
}

// copyReader is ReadPacket's buffer, made at its first call, for a reader
// that passes on copies (a reader with its own buffer calls
// ReadPacketInto).
type copyReader struct {
	mu  sync.Mutex
	buf []byte
}

// read reads with into and returns the packet with a payload of its own.
func (r *copyReader) read(into func([]byte) (Packet, error)) (Packet, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.buf == nil {
		r.buf = make([]byte, bufSize)
	}
	p, err := into(r.buf)
	p.Payload = append([]byte(nil), p.Payload...)
	return p, err
}

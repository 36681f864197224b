package announce

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"

	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/packet"
	"golang.org/x/net/bpf"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

// Announcer sends unsolicited address announcements on one interface.
// Its sockets are opened on first use per family (an IPv4-only host never
// opens an ICMPv6 socket) in the network namespace of the calling thread.
// It is safe for concurrent use.
type Announcer struct {
	ifi net.Interface

	mu     sync.Mutex
	closed bool
	arp    *packet.Conn     // AF_PACKET, raw frames
	garp   garpSend         // what a gratuitous ARP's write needs, kept with arp
	nd     *ipv6.PacketConn // ICMPv6
}

// garpSend is what one gratuitous ARP's write needs, kept with the socket
// so that a write allocates nothing: packet.Conn's WriteTo made a
// sockaddr, its callback and an error wrapper per frame, and the frame was
// marshalled anew (about 1.5 KB a frame, 30 MB for the 20,000 a node of
// 1,000 instances and 10,000 VIPs sends at its start: docs/design/memory.md).
// Guarded by Announcer.mu.
type garpSend struct {
	rc    syscall.RawConn
	do    func(fd uintptr) bool // send, made once (a method value allocates)
	frame [garpLen]byte
	to    unix.SockaddrLinklayer
	err   error
}

// send is the RawConn.Write callback: false asks to wait until the socket
// is writable (EAGAIN) and try again.
func (g *garpSend) send(fd uintptr) bool {
	g.err = unix.Sendto(int(fd), g.frame[:], 0, &g.to)
	return g.err != unix.EAGAIN
}

// New returns an Announcer for ifi, which must have an Ethernet address.
func New(ifi *net.Interface) (*Announcer, error) {
	if ifi == nil {
		return nil, errors.New("announce: nil interface")
	}
	if err := checkMAC(ifi.HardwareAddr); err != nil {
		return nil, fmt.Errorf("announce on %s: %w", ifi.Name, err)
	}
	c := *ifi
	c.HardwareAddr = append(net.HardwareAddr(nil), ifi.HardwareAddr...)
	return &Announcer{ifi: c}, nil
}

// Close closes the sockets. Announce fails afterwards.
func (a *Announcer) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	var errs []error
	if a.arp != nil {
		errs = append(errs, a.arp.Close())
		a.arp = nil
	}
	if a.nd != nil {
		errs = append(errs, a.nd.Close())
		a.nd = nil
	}
	return errors.Join(errs...)
}

// Announce sends one gratuitous ARP (IPv4 addr) or one unsolicited Neighbor
// Advertisement (IPv6 addr, sent from addr to ff02::1 with hop limit 255)
// for addr, from the interface's MAC.
func (a *Announcer) Announce(addr netip.Addr) error {
	addr = addr.Unmap().WithZone("")
	if err := a.announce(addr); err != nil {
		return fmt.Errorf("announce %s on %s: %w", addr, a.ifi.Name, err)
	}
	return nil
}

func (a *Announcer) announce(addr netip.Addr) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return net.ErrClosed
	}
	if addr.Is4() {
		return a.sendGARP(addr)
	}
	msg, err := MarshalNA(a.ifi.HardwareAddr, addr)
	if err != nil {
		return err
	}
	if a.nd == nil {
		c, err := listenND(&a.ifi)
		if err != nil {
			return err
		}
		a.nd = c
	}
	cm := &ipv6.ControlMessage{Src: addr.AsSlice(), IfIndex: a.ifi.Index, HopLimit: 255}
	_, err = a.nd.WriteTo(msg, cm, &net.IPAddr{IP: allNodes.AsSlice(), Zone: a.ifi.Name})
	return err
}

// sendGARP sends a gratuitous ARP for addr; a.mu is held.
func (a *Announcer) sendGARP(addr netip.Addr) error {
	if _, err := appendGARP(a.garp.frame[:0], a.ifi.HardwareAddr, addr); err != nil {
		return err
	}
	if a.arp == nil {
		c, err := listenARP(&a.ifi)
		if err != nil {
			return err
		}
		rc, err := c.SyscallConn()
		if err != nil {
			c.Close()
			return fmt.Errorf("packet socket: %w", err)
		}
		a.arp, a.garp.rc = c, rc
		a.garp.do = a.garp.send
		// As packet.Conn.WriteTo addressed it: the interface, ARP, the
		// Ethernet broadcast address.
		a.garp.to = unix.SockaddrLinklayer{Protocol: htons(etherTypeARP), Ifindex: a.ifi.Index, Halen: 6}
		copy(a.garp.to.Addr[:], ethernet.Broadcast)
	}
	if err := a.garp.rc.Write(a.garp.do); err != nil {
		return &net.OpError{Op: "write", Net: "packet", Err: err}
	}
	if a.garp.err != nil {
		return &net.OpError{Op: "sendto", Net: "packet", Err: os.NewSyscallError("sendto", a.garp.err)}
	}
	return nil
}

// htons converts a 16-bit value from host to network byte order, as the
// kernel wants sll_protocol.
func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}

// listenARP opens a packet socket for ARP frames that receives nothing: a
// drop-all BPF filter is attached before bind, so no queue builds up.
func listenARP(ifi *net.Interface) (*packet.Conn, error) {
	drop, err := bpf.Assemble([]bpf.Instruction{bpf.RetConstant{Val: 0}})
	if err != nil {
		return nil, fmt.Errorf("assemble filter: %w", err)
	}
	c, err := packet.Listen(ifi, packet.Raw, etherTypeARP, &packet.Config{Filter: drop})
	if err != nil {
		return nil, fmt.Errorf("open packet socket: %w", err)
	}
	return c, nil
}

// listenND opens a send-only ICMPv6 socket: hop limit 255 (RFC 4861
// requires it of every ND message), no multicast loopback, every incoming
// ICMPv6 type filtered out, and IPV6_FREEBIND so the VIP can be the source
// even while the kernel still holds it tentative.
func listenND(ifi *net.Interface) (*ipv6.PacketConn, error) {
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_FREEBIND, 1)
		}); err != nil {
			return err
		}
		return serr
	}}
	c, err := lc.ListenPacket(context.Background(), "ip6:ipv6-icmp", "::")
	if err != nil {
		return nil, fmt.Errorf("open ICMPv6 socket: %w", err)
	}
	p := ipv6.NewPacketConn(c)
	var f ipv6.ICMPFilter
	f.SetAll(true)
	steps := []struct {
		what string
		err  error
	}{
		{"set hop limit", p.SetHopLimit(255)},
		{"set multicast hop limit", p.SetMulticastHopLimit(255)},
		{"disable multicast loopback", p.SetMulticastLoopback(false)},
		{"set multicast interface", p.SetMulticastInterface(ifi)},
		{"set ICMPv6 filter", p.SetICMPFilter(&f)},
	}
	for _, s := range steps {
		if s.err != nil {
			p.Close()
			return nil, fmt.Errorf("ICMPv6 socket: %s: %w", s.what, s.err)
		}
	}
	return p, nil
}

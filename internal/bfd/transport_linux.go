package bfd

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

// udpTransport receives on the well-known port and sends from a port in
// 49152-65535, both with TTL/hop limit 255 (RFC 5881 section 4 and 5,
// RFC 5883 section 2).
type udpTransport struct {
	rx, tx *net.UDPConn
	rx4    *ipv4.PacketConn
	rx6    *ipv6.PacketConn
	peer   *net.UDPAddr
}

// Dial opens the sockets for cfg and starts the session.
func Dial(cfg SessionConfig) (*Session, error) {
	if _, err := cfg.machineConfig(); err != nil {
		return nil, err
	}
	t, err := listenUDP(cfg)
	if err != nil {
		return nil, err
	}
	s, err := NewSession(cfg, t)
	if err != nil {
		t.Close()
		return nil, err
	}
	return s, nil
}

func listenUDP(cfg SessionConfig) (*udpTransport, error) {
	v4 := cfg.Local.Unmap().Is4()
	network := "udp6"
	if v4 {
		network = "udp4"
	}
	zone := cfg.Interface
	local := func(port int) *net.UDPAddr {
		a := &net.UDPAddr{IP: cfg.Local.Unmap().AsSlice(), Port: port}
		if !v4 && cfg.Local.IsLinkLocalUnicast() {
			a.Zone = zone
		}
		return a
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if cfg.Interface != "" {
				serr = unix.SetsockoptString(int(fd), unix.SOL_SOCKET, unix.SO_BINDTODEVICE, cfg.Interface)
			}
		})
		if err != nil {
			return err
		}
		return serr
	}}
	listen := func(port int) (*net.UDPConn, error) {
		c, err := lc.ListenPacket(context.Background(), network, local(port).String())
		if err != nil {
			return nil, err
		}
		return c.(*net.UDPConn), nil
	}
	t := &udpTransport{}
	var err error
	if t.rx, err = listen(cfg.Port()); err != nil {
		return nil, fmt.Errorf("bfd: listen on %v: %w", local(cfg.Port()), err)
	}
	// A random source port in range; retry a few taken ones.
	for range 32 {
		var b [2]byte
		if _, err = rand.Read(b[:]); err != nil {
			break
		}
		port := SourcePortFirst + int(binary.BigEndian.Uint16(b[:]))%(SourcePortLast-SourcePortFirst+1)
		if t.tx, err = listen(port); err == nil || !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	if err != nil {
		t.rx.Close()
		return nil, fmt.Errorf("bfd: bind a source port in %d-%d on %v: %w", SourcePortFirst, SourcePortLast, cfg.Local, err)
	}
	t.peer = &net.UDPAddr{IP: cfg.Peer.Unmap().AsSlice(), Port: cfg.Port()}
	if !v4 && cfg.Peer.IsLinkLocalUnicast() {
		t.peer.Zone = zone
	}
	if err := t.setup(v4); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

func (t *udpTransport) setup(v4 bool) error {
	if v4 {
		t.rx4 = ipv4.NewPacketConn(t.rx)
		if err := t.rx4.SetControlMessage(ipv4.FlagTTL, true); err != nil {
			return fmt.Errorf("bfd: IP_RECVTTL: %w", err)
		}
		tx := ipv4.NewConn(t.tx)
		if err := tx.SetTTL(255); err != nil {
			return fmt.Errorf("bfd: IP_TTL 255: %w", err)
		}
		// Network control precedence, as RFC 5881 section 4 suggests
		// routers send it.
		if err := tx.SetTOS(0xc0); err != nil {
			return fmt.Errorf("bfd: IP_TOS: %w", err)
		}
		return nil
	}
	t.rx6 = ipv6.NewPacketConn(t.rx)
	if err := t.rx6.SetControlMessage(ipv6.FlagHopLimit, true); err != nil {
		return fmt.Errorf("bfd: IPV6_RECVHOPLIMIT: %w", err)
	}
	tx := ipv6.NewPacketConn(t.tx)
	if err := tx.SetHopLimit(255); err != nil {
		return fmt.Errorf("bfd: IPV6_UNICAST_HOPS 255: %w", err)
	}
	if err := tx.SetTrafficClass(0xc0); err != nil {
		return fmt.Errorf("bfd: IPV6_TCLASS: %w", err)
	}
	return nil
}

func (t *udpTransport) Read(b []byte) (int, netip.AddrPort, int, error) {
	var (
		n   int
		src net.Addr
		ttl = -1
		err error
	)
	if t.rx4 != nil {
		var cm *ipv4.ControlMessage
		n, cm, src, err = t.rx4.ReadFrom(b)
		if cm != nil {
			ttl = cm.TTL
		}
	} else {
		var cm *ipv6.ControlMessage
		n, cm, src, err = t.rx6.ReadFrom(b)
		if cm != nil {
			ttl = cm.HopLimit
		}
	}
	if err != nil {
		return 0, netip.AddrPort{}, 0, err
	}
	u, ok := src.(*net.UDPAddr)
	if !ok {
		return 0, netip.AddrPort{}, 0, fmt.Errorf("bfd: source %v is not UDP", src)
	}
	return n, u.AddrPort(), ttl, nil
}

func (t *udpTransport) Write(b []byte) error {
	_, err := t.tx.WriteToUDP(b, t.peer)
	return err
}

func (t *udpTransport) Close() error {
	var errs []error
	if t.rx != nil {
		errs = append(errs, t.rx.Close())
	}
	if t.tx != nil {
		errs = append(errs, t.tx.Close())
	}
	return errors.Join(errs...)
}

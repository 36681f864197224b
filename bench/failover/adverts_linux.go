package main

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/vipstack/vipstack/internal/testnet"
)

// vrrpGroup is the IPv4 multicast group VRRP advertises to (RFC 5798
// section 5.1.1.2).
var vrrpGroup = net.IPv4(224, 0, 0, 18)

// advertWatch records when the client sees each node's VRRP advertisements,
// so a crash can be placed within the master's advertisement interval: the
// backup's Master_Down timer started at the last advertisement before the
// crash, not at the crash.
type advertWatch struct {
	conn *ipv4.PacketConn

	mu   sync.Mutex
	seen map[netip.Addr][]time.Time
}

const maxAdverts = 4096 // per source, oldest dropped

// watchAdverts opens a raw IP socket for protocol 112 in the client's
// namespace, joined to 224.0.0.18 on its link.
func watchAdverts(client *testnet.Host) (*advertWatch, error) {
	w := &advertWatch{seen: map[netip.Addr][]time.Time{}}
	err := client.Do(func() error {
		c, err := net.ListenPacket("ip4:112", "0.0.0.0")
		if err != nil {
			return err
		}
		ifi, err := net.InterfaceByName(client.Link)
		if err != nil {
			c.Close()
			return err
		}
		pc := ipv4.NewPacketConn(c)
		if err := pc.JoinGroup(ifi, &net.IPAddr{IP: vrrpGroup}); err != nil {
			c.Close()
			return err
		}
		w.conn = pc
		return nil
	})
	if err != nil {
		return nil, err
	}
	go func() {
		buf := make([]byte, 1500)
		for {
			_, _, src, err := w.conn.ReadFrom(buf)
			if err != nil {
				return // closed
			}
			now := time.Now()
			ip, ok := src.(*net.IPAddr)
			if !ok {
				continue
			}
			a, ok := netip.AddrFromSlice(ip.IP)
			if !ok {
				continue
			}
			w.mu.Lock()
			l := append(w.seen[a.Unmap()], now)
			if len(l) > maxAdverts {
				l = l[len(l)-maxAdverts:]
			}
			w.seen[a.Unmap()] = l
			w.mu.Unlock()
		}
	}()
	return w, nil
}

// reset forgets everything seen so far.
func (w *advertWatch) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	clear(w.seen)
}

// lastBefore returns when the last advertisement from src before t arrived.
func (w *advertWatch) lastBefore(src netip.Addr, t time.Time) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.seen[src]
	for i := len(l) - 1; i >= 0; i-- {
		if l[i].Before(t) {
			return l[i], true
		}
	}
	return time.Time{}, false
}

func (w *advertWatch) close() { _ = w.conn.Close() }

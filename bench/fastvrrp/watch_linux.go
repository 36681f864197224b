package main

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/vipstack/vipstack/internal/testnet"
)

// episodeGap separates two false failovers of one backup: adverts from it
// closer together than this are one takeover.
const episodeGap = 200 * time.Millisecond

const keepPerSource = 8192 // timestamps kept per source (80 s at 10 ms)

// watch records the VRRP advertisements the client hears, per source.
type watch struct {
	conn *ipv4.PacketConn

	mu      sync.Mutex
	seen    map[netip.Addr][]time.Time
	soaking bool
	soak    map[netip.Addr]*soakStats
}

// soakStats is one source's advertisements during the soak.
type soakStats struct {
	n        int
	prev     time.Time
	maxGap   time.Duration
	episodes int
}

func watchAdverts(client *testnet.Host) (*watch, error) {
	w := &watch{seen: map[netip.Addr][]time.Time{}, soak: map[netip.Addr]*soakStats{}}
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
		if err := pc.JoinGroup(ifi, &net.IPAddr{IP: net.IPv4(224, 0, 0, 18)}); err != nil {
			c.Close()
			return err
		}
		w.conn = pc
		return nil
	})
	if err != nil {
		return nil, err
	}
	go w.read()
	return w, nil
}

func (w *watch) read() {
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
		a = a.Unmap()
		w.mu.Lock()
		l := append(w.seen[a], now)
		if len(l) > keepPerSource {
			l = l[len(l)-keepPerSource:]
		}
		w.seen[a] = l
		if w.soaking {
			s := w.soak[a]
			if s == nil {
				s = &soakStats{}
				w.soak[a] = s
			}
			if s.prev.IsZero() || now.Sub(s.prev) > episodeGap {
				s.episodes++
			}
			if g := now.Sub(s.prev); !s.prev.IsZero() && g > s.maxGap {
				s.maxGap = g
			}
			s.n++
			s.prev = now
		}
		w.mu.Unlock()
	}
}

// startSoak starts counting from now.
func (w *watch) startSoak() {
	w.mu.Lock()
	defer w.mu.Unlock()
	clear(w.soak)
	w.soaking = true
}

// endSoak stops counting and returns what each source sent.
func (w *watch) endSoak() map[netip.Addr]soakStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.soaking = false
	out := map[netip.Addr]soakStats{}
	for a, s := range w.soak {
		out[a] = *s
	}
	return out
}

// lastBefore is src's last advertisement before t.
func (w *watch) lastBefore(src netip.Addr, t time.Time) (time.Time, bool) {
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

// firstAfter is src's first advertisement after t.
func (w *watch) firstAfter(src netip.Addr, t time.Time) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, x := range w.seen[src] {
		if x.After(t) {
			return x, true
		}
	}
	return time.Time{}, false
}

func (w *watch) close() { _ = w.conn.Close() }

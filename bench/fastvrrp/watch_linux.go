package main

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/testnet"
)

// episodeGap separates two false failovers of one backup: adverts from it
// closer together than this are one takeover.
const episodeGap = 200 * time.Millisecond

const keepPerSource = 8192 // timestamps kept per source (80 s at 10 ms)

// watch records the VRRP advertisements the client hears, per source, at
// the time the kernel received each (SO_TIMESTAMPNS): the bench's own
// process runs beside the busy loops too, and reading late must not count
// as a late advert.
type watch struct {
	conn *net.IPConn

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
	gaps     [nGapBounds + 1]int // gaps between adverts, by gapBounds
	long     []span              // the gaps over longGap, the first maxLong
	starts   []time.Time         // when each episode began, the first maxLong
}

// span is a silence of one source: from one advert to the next.
type span struct{ from, to time.Time }

// longGap is a gap that lets the backup take over (Master_Down_Interval
// plus 10 ms); maxLong bounds how many are kept per source.
const (
	longGap = 46 * time.Millisecond
	maxLong = 10000
)

// overlapping counts the spans of a that overlap a span of b: two
// independent processes silent at the same time point at the machine
// (both waiting for a CPU or the kernel), not at either one.
func overlapping(a, b []span) int {
	n := 0
	for _, x := range a {
		for _, y := range b {
			if x.from.Before(y.to) && y.from.Before(x.to) {
				n++
				break
			}
		}
	}
	return n
}

func (s *soakStats) addGap(g time.Duration) {
	bounds, i := gapBounds(), 0
	for i < len(bounds) && g > bounds[i] {
		i++
	}
	s.gaps[i]++
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
		if err := ipv4.NewPacketConn(c).JoinGroup(ifi, &net.IPAddr{IP: net.IPv4(224, 0, 0, 18)}); err != nil {
			c.Close()
			return err
		}
		w.conn = c.(*net.IPConn)
		if err := timestamps(w.conn); err != nil {
			c.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	go w.read()
	return w, nil
}

// timestamps asks the kernel for each packet's receive time, and for a
// receive buffer that holds the adverts of seconds of a late reader.
func timestamps(c *net.IPConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); serr == nil {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 4<<20)
		}
	})
	if err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("SO_TIMESTAMPNS, SO_RCVBUFFORCE: %w", serr)
	}
	return nil
}

// rxTime is the kernel's receive time from oob, else now.
func rxTime(oob []byte) time.Time {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Now()
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
			sec, nsec := binary.NativeEndian.Uint64(m.Data), binary.NativeEndian.Uint64(m.Data[8:])
			return time.Unix(int64(sec), int64(nsec))
		}
	}
	return time.Now()
}

func (w *watch) read() {
	buf := make([]byte, 1500)
	oob := make([]byte, 128)
	for {
		_, oobn, _, src, err := w.conn.ReadMsgIP(buf, oob)
		if err != nil {
			return // closed
		}
		now := rxTime(oob[:oobn])
		a, ok := netip.AddrFromSlice(src.IP)
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
				if len(s.starts) < maxLong {
					s.starts = append(s.starts, now)
				}
			}
			if g := now.Sub(s.prev); !s.prev.IsZero() {
				s.maxGap = max(s.maxGap, g)
				s.addGap(g)
				if g > longGap && len(s.long) < maxLong {
					s.long = append(s.long, span{s.prev, now})
				}
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

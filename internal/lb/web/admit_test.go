package web

import (
	"net"
	"net/netip"
	"testing"
)

// TestWebEvictOrder: evict picks, among waiting clients, the oldest of
// the address holding the most connections, and never one being
// answered.
func TestWebEvictOrder(t *testing.T) {
	a, b, x := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2"), netip.MustParseAddr("198.18.0.3")
	type conn struct {
		src       netip.Addr
		answering bool
	}
	for _, tc := range []struct {
		name  string
		conns []conn // in accept order
		want  int    // index evicted, -1 for none
	}{
		{name: "oldest of one address", conns: []conn{{src: a}, {src: a}, {src: a}}, want: 0},
		{name: "the address with the most", conns: []conn{{src: a}, {src: b}, {src: b}, {src: a}, {src: b}}, want: 1},
		{name: "a tie goes to the oldest", conns: []conn{{src: b}, {src: a}, {src: a}, {src: b}}, want: 0},
		{name: "not one being answered", conns: []conn{{src: a, answering: true}, {src: a}, {src: x}}, want: 1},
		{name: "answering ones count for their address", conns: []conn{{src: x}, {src: a, answering: true}, {src: a, answering: true}, {src: a}, {src: x}}, want: 3},
		{name: "none waiting", conns: []conn{{src: a, answering: true}, {src: b, answering: true}}, want: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Listener{conns: map[net.Conn]struct{}{}, slots: make(chan struct{}, len(tc.conns))}
			var wcs []*webConn
			for i, c := range tc.conns {
				p1, p2 := net.Pipe()
				t.Cleanup(func() { p1.Close(); p2.Close() })
				wc := &webConn{Conn: p1, seq: uint64(i + 1), src: c.src}
				if c.answering {
					wc.state.Store(webAnswering)
				}
				h.slots <- struct{}{}
				h.conns[wc] = struct{}{}
				wcs = append(wcs, wc)
			}
			got := -1
			if h.evict() {
				for i, wc := range wcs {
					if wc.state.Load() == webEvicted {
						got = i
					}
				}
			}
			if got != tc.want {
				t.Errorf("evicted %d, want %d", got, tc.want)
			}
		})
	}
}

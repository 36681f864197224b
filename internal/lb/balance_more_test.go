package lb

import (
	"net/netip"
	"testing"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestStaticRR: static-rr walks haproxy's slot map (the one balance
// source indexes) in order, passes over a full server or one in skip, and
// rebuilds the map when a server goes down.
func TestStaticRR(t *testing.T) {
	tests := []struct {
		name    string
		weights []int
		down    []int
		full    []int
		skip    uint64
		n       int
		want    string
	}{
		{name: "equal weights rotate", weights: []int{1, 1, 1}, n: 7, want: "abcabca"},
		{name: "weights 3 1 by slots", weights: []int{3, 1}, n: 8, want: "aaabaaab"},
		{name: "a down server leaves the map", weights: []int{1, 1, 1}, down: []int{1}, n: 4, want: "acac"},
		{name: "a full server is passed over", weights: []int{1, 1, 1}, full: []int{0}, n: 4, want: "bcbc"},
		{name: "skip excludes", weights: []int{1, 1}, skip: 1 << 1, n: 3, want: "aaa"},
		{name: "none usable", weights: []int{1}, down: []int{0}, n: 2, want: "--"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPool(lbconfig.StaticRR, tt.weights...)
			for _, i := range tt.down {
				p.servers[i].up.Store(false)
			}
			for _, i := range tt.full {
				p.servers[i].params.maxconn.Store(1)
				p.servers[i].cur.Store(1)
			}
			if got := picks(p, tt.n, netip.Addr{}, tt.skip); got != tt.want {
				t.Errorf("picks = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestFirst: balance first takes the lowest id with a free slot, the
// next once it is full, its place in the backend without an id.
func TestFirst(t *testing.T) {
	p := testPool(lbconfig.First, 1, 1, 1)
	for _, s := range p.servers {
		s.params.maxconn.Store(2)
	}
	p.servers[0].params.id.Store(3) // a: id 3; b: 2 by place; c: 3 by place, after a
	var got []string
	for range 7 {
		i := p.pick(netip.Addr{}, 0)
		if i < 0 {
			got = append(got, "-")
			continue
		}
		p.servers[i].cur.Add(1)
		got = append(got, p.servers[i].name)
	}
	want := "b b a a c c -"
	if g := join(got); g != want {
		t.Errorf("picks = %q, want %q", g, want)
	}
	p.servers[1].up.Store(false)
	p.servers[0].cur.Store(0)
	if i := p.pick(netip.Addr{}, 0); i != 0 {
		t.Errorf("with b down and a free: picked %d, want 0 (a)", i)
	}
}

func join(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += " "
		}
		out += s
	}
	return out
}

// TestRandom: balance random spreads by weight and, of two draws, takes
// the one with fewer connections per unit of weight: a loaded server
// gets fewer new connections than its weight's share.
func TestRandom(t *testing.T) {
	const n = 20000
	p := testPool(lbconfig.Random, 1, 3)
	c := counts(picks(p, n, netip.Addr{}, 0))
	// With no connections held, one draw of two is taken: the shares
	// are the weights' (1/4, 3/4); 20000 draws put b within 70%..80%.
	if share := float64(c['b']) / n; share < 0.70 || share > 0.80 {
		t.Errorf("weights 1 3: b took %.3f of the picks, want about 0.75 (counts %v)", share, c)
	}
	p = testPool(lbconfig.Random, 1, 1)
	p.servers[0].cur.Store(10)
	c = counts(picks(p, n, netip.Addr{}, 0))
	// a is picked only when both draws are a: a quarter of the time.
	if share := float64(c['a']) / n; share < 0.20 || share > 0.30 {
		t.Errorf("a loaded: a took %.3f of the picks, want about 0.25 (counts %v)", share, c)
	}
	p.servers[1].up.Store(false)
	if got := picks(p, 5, netip.Addr{}, 0); got != "aaaaa" {
		t.Errorf("b down: picks %q, want aaaaa", got)
	}
	if got := picks(p, 2, netip.Addr{}, 1); got != "--" {
		t.Errorf("a skipped, b down: picks %q, want --", got)
	}
}

package lb

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// testPool builds a pool of servers named a, b, c, ... with the given
// weights, all UP.
func testPool(balance lbconfig.Balance, weights ...int) *pool {
	var ss []*server
	for i := range weights {
		s := &server{name: string(rune('a' + i))}
		s.up.Store(true)
		ss = append(ss, s)
	}
	return newPool("b", balance, ss, weights)
}

func picks(p *pool, n int, client netip.Addr, skip uint64) string {
	var b strings.Builder
	for range n {
		i := p.pick(client, skip)
		if i < 0 {
			b.WriteByte('-')
			continue
		}
		b.WriteString(p.servers[i].name)
	}
	return b.String()
}

func counts(seq string) map[rune]int {
	m := map[rune]int{}
	for _, r := range seq {
		m[r]++
	}
	return m
}

func TestRoundRobin(t *testing.T) {
	tests := []struct {
		name    string
		weights []int
		down    []int
		skip    uint64
		n       int
		want    string
	}{
		{name: "equal weights rotate", weights: []int{1, 1, 1}, n: 7, want: "abcabca"},
		{name: "nginx's example 5 1 1", weights: []int{5, 1, 1}, n: 14, want: "aabacaaaabacaa"},
		{name: "3 2 interleave", weights: []int{3, 2}, n: 10, want: "ababaababa"},
		{name: "down servers are skipped at once", weights: []int{1, 1, 1}, down: []int{1}, n: 6, want: "acacac"},
		{name: "weight 0 takes nothing", weights: []int{1, 0, 1}, n: 4, want: "acac"},
		{name: "skip set excludes", weights: []int{1, 1, 1}, skip: 1 << 0, n: 4, want: "bcbc"},
		{name: "nothing up", weights: []int{1, 1}, down: []int{0, 1}, n: 2, want: "--"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPool(lbconfig.RoundRobin, tt.weights...)
			for _, d := range tt.down {
				p.servers[d].up.Store(false)
			}
			if diff := cmp.Diff(tt.want, picks(p, tt.n, netip.Addr{}, tt.skip)); diff != "" {
				t.Errorf("picks (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRoundRobinExactShares checks SWRR's guarantee: over every window of
// total-weight picks each server gets exactly its weight.
func TestRoundRobinExactShares(t *testing.T) {
	weights := []int{7, 3, 1, 5}
	p := testPool(lbconfig.RoundRobin, weights...)
	total := 16
	for w := range 50 {
		got := counts(picks(p, total, netip.Addr{}, 0))
		want := map[rune]int{'a': 7, 'b': 3, 'c': 1, 'd': 5}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("window %d (-want +got):\n%s", w, diff)
		}
	}
}

func TestLeastConn(t *testing.T) {
	tests := []struct {
		name    string
		weights []int
		cur     []int64
		down    []int
		want    string // the only acceptable pick, or several for ties
	}{
		{name: "fewest sessions", weights: []int{1, 1, 1}, cur: []int64{3, 1, 2}, want: "b"},
		{name: "per weight: 4/2 beats 3/1", weights: []int{1, 2}, cur: []int64{2, 3}, want: "b"},
		{name: "down is never picked", weights: []int{1, 1}, cur: []int64{9, 0}, down: []int{1}, want: "a"},
		{name: "ties rotate", weights: []int{1, 1, 1}, cur: []int64{0, 0, 5}, want: "ab"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPool(lbconfig.LeastConn, tt.weights...)
			for i, c := range tt.cur {
				p.servers[i].cur.Store(c)
			}
			for _, d := range tt.down {
				p.servers[d].up.Store(false)
			}
			seen := counts(picks(p, 10, netip.Addr{}, 0))
			var got []rune
			for r := range seen {
				got = append(got, r)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("picked %v, want only and all of %q", seen, tt.want)
			}
			for _, r := range tt.want {
				if seen[r] == 0 {
					t.Fatalf("picked %v, want only and all of %q", seen, tt.want)
				}
			}
		})
	}
}

func TestSource(t *testing.T) {
	p := testPool(lbconfig.Source, 1, 1, 1)
	clients := make([]netip.Addr, 300)
	for i := range clients {
		clients[i] = netip.AddrFrom4([4]byte{198, 18, byte(i / 250), byte(i % 250)})
	}
	first := map[netip.Addr]string{}
	for _, c := range clients {
		first[c] = picks(p, 1, c, 0)
	}
	// Sticky: the same client always gets the same server.
	for _, c := range clients {
		if got := picks(p, 5, c, 0); got != strings.Repeat(first[c], 5) {
			t.Fatalf("client %v: picks %q, want always %q", c, got, first[c])
		}
	}
	// IPv4-mapped IPv6 (a client of an IPv6 socket) hashes as haproxy
	// hashes it, its four words XORed: like the IPv4 address whose low
	// half is flipped by the 0xffff word.
	for _, c := range clients[:20] {
		mapped := netip.AddrFrom16(c.As16())
		b := c.As4()
		flipped := netip.AddrFrom4([4]byte{b[0], b[1], ^b[2], ^b[3]})
		if got, want := picks(p, 1, mapped, 0), picks(p, 1, flipped, 0); got != want {
			t.Errorf("IPv4-mapped %v picked %q, want %q like %v", mapped, got, want, flipped)
		}
	}
	// Spread: every server gets a fair share (300 clients, 3 servers).
	share := map[string]int{}
	for _, s := range first {
		share[s]++
	}
	for _, s := range []string{"a", "b", "c"} {
		if share[s] < 60 {
			t.Errorf("server %s got %d of 300 clients, want a fair share: %v", s, share[s], share)
		}
	}
	// A DOWN server's clients go elsewhere; weight shares follow weights.
	p.servers[0].up.Store(false)
	for _, c := range clients {
		if got := picks(p, 1, c, 0); got == "a" || got == "-" {
			t.Fatalf("client %v picked %q with a DOWN", c, got)
		}
	}
	w := testPool(lbconfig.Source, 3, 1)
	share = map[string]int{}
	for _, c := range clients {
		share[picks(w, 1, c, 0)]++
	}
	if share["a"] < 2*share["b"] {
		t.Errorf("weights 3:1 gave shares %v, want a about 3x b", share)
	}
}

package ipfailover

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func specWith(n, groups int) *Spec {
	s := imageDefaults()
	s.VIPs = nil
	a := netip.MustParseAddr("10.1.0.1")
	for range n {
		s.VIPs = append(s.VIPs, a)
		a = a.Next()
	}
	s.VIPGroups = groups
	return s
}

// layout renders a plan compactly: "name order [vips]".
func layout(p *Plan) []string {
	var out []string
	for _, g := range p.Groups {
		var v []string
		for _, a := range g.VIPs {
			v = append(v, strings.TrimPrefix(a.String(), "10.1.0."))
		}
		out = append(out, fmt.Sprintf("%s order %v vips %s", g.Name, g.Order, strings.Join(v, ",")))
	}
	return out
}

func TestNewPlanLayout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		vips   int
		groups int
		ranks  int
		want   []string
	}{
		{
			name: "default groups for 3 nodes: 6, each node preferred for 2 with different second choices",
			vips: 10, ranks: 3,
			want: []string{
				"OpenShift_IPFailover_VIP_1 order [0 1 2] vips 1,7",
				"OpenShift_IPFailover_VIP_2 order [1 2 0] vips 2,8",
				"OpenShift_IPFailover_VIP_3 order [2 0 1] vips 3,9",
				"OpenShift_IPFailover_VIP_4 order [0 2 1] vips 4,10",
				"OpenShift_IPFailover_VIP_5 order [1 0 2] vips 5",
				"OpenShift_IPFailover_VIP_6 order [2 1 0] vips 6",
			},
		},
		{
			name: "one group: one node preferred for every VIP",
			vips: 3, ranks: 3, groups: 1,
			want: []string{"OpenShift_IPFailover_VIP_1 order [0 1 2] vips 1,2,3"},
		},
		{
			name: "groups not a multiple of the ranks: shares stay even",
			vips: 7, ranks: 2, groups: 3,
			want: []string{
				"OpenShift_IPFailover_VIP_1 order [0 1] vips 1,5",
				"OpenShift_IPFailover_VIP_2 order [1 0] vips 2,4,6",
				"OpenShift_IPFailover_VIP_3 order [0 1] vips 3,7",
			},
		},
		{
			name: "single node",
			vips: 2, ranks: 1,
			want: []string{"OpenShift_IPFailover_VIP_1 order [0] vips 1,2"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := layout(NewPlan(specWith(tc.vips, tc.groups), tc.ranks))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("NewPlan (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNewPlanProperties checks, over many sizes, that every VIP is in
// exactly one group, that with every node up the shares differ by at most
// one VIP, that priorities put the preferred rank first and are distinct,
// and that with the default group count a failed node's groups go one to
// each survivor.
func TestNewPlanProperties(t *testing.T) {
	for _, vips := range []int{1, 2, 5, 254, 255, 256, 300, 1001} {
		for _, ranks := range []int{1, 2, 3, 4, 7} {
			for _, groups := range []int{0, 1, 2, 3, 5, 6, 13, 300} {
				name := fmt.Sprintf("vips=%d ranks=%d groups=%d", vips, ranks, groups)
				p := NewPlan(specWith(vips, groups), ranks)
				seen := map[netip.Addr]int{}
				for _, g := range p.Groups {
					if len(g.VIPs) == 0 {
						t.Errorf("%s: %s holds no VIP", name, g.Name)
					}
					if cap(g.VIPs) != len(g.VIPs) {
						t.Errorf("%s: %s's list has room for %d VIPs, holds %d: want it at its size", name, g.Name, cap(g.VIPs), len(g.VIPs))
					}
					for _, a := range g.VIPs {
						seen[a]++
					}
					prios := map[uint8]bool{}
					for r := range ranks {
						pr := g.Priority(r)
						if prios[pr] {
							t.Errorf("%s: %s gives priority %d to two ranks", name, g.Name, pr)
						}
						prios[pr] = true
						if r != g.Order[0] && pr >= g.Priority(g.Order[0]) {
							t.Errorf("%s: %s: rank %d priority %d not below the preferred rank's %d", name, g.Name, r, pr, g.Priority(g.Order[0]))
						}
					}
				}
				if len(seen) != vips {
					t.Errorf("%s: %d VIPs placed, want %d", name, len(seen), vips)
				}
				for a, n := range seen {
					if n != 1 {
						t.Errorf("%s: %s in %d groups", name, a, n)
					}
				}
				share := p.Share()
				active := min(ranks, len(p.Groups))
				lo, hi := slices.Min(share[:active]), slices.Max(share[:active])
				if hi-lo > 1 {
					t.Errorf("%s: shares %v differ by more than one VIP", name, share)
				}
				if groups == 0 && ranks > 1 && vips >= ranks*(ranks-1) {
					for dead := range ranks {
						got := map[int]int{}
						for _, g := range p.Groups {
							if g.Order[0] == dead {
								got[g.Order[1]]++
							}
						}
						for r := range ranks {
							if r != dead && got[r] != 1 {
								t.Errorf("%s: rank %d fails; rank %d takes %d of its groups, want 1 (%v)", name, dead, r, got[r], got)
							}
						}
					}
				}
			}
		}
	}
}

func TestRankOf(t *testing.T) {
	for _, tc := range []struct {
		name  string
		self  string
		peers []string
		nodes []string
		repl  int
		want  Ranks
	}{
		{
			name: "unicast: position in the sorted peer list",
			self: "10.0.0.12", peers: []string{"10.0.0.13", "10.0.0.12", "10.0.0.11"}, repl: 3,
			want: Ranks{Self: 1, Count: 3, Members: addrs("10.0.0.11", "10.0.0.12", "10.0.0.13"),
				Basis: "position of 10.0.0.12 in the sorted OPENSHIFT_HA_UNICAST_PEERS (2 of 3)"},
		},
		{
			name: "unicast: self missing from the list is added",
			self: "10.0.0.5", peers: []string{"10.0.0.11", "10.0.0.13"}, repl: 3,
			want: Ranks{Self: 0, Count: 3, Members: addrs("10.0.0.5", "10.0.0.11", "10.0.0.13"),
				Basis: "position of 10.0.0.5 in the sorted OPENSHIFT_HA_UNICAST_PEERS (1 of 3)"},
		},
		{
			name: "multicast with a node list",
			self: "10.0.0.13", nodes: []string{"10.0.0.11", "10.0.0.12", "10.0.0.13"}, repl: 2,
			want: Ranks{Self: 2, Count: 3, Members: addrs("10.0.0.11", "10.0.0.12", "10.0.0.13"),
				Basis: "position of 10.0.0.13 in the sorted node list (3 of 3)"},
		},
		{
			name: "multicast: address modulo the replica count",
			self: "10.0.0.13", repl: 3,
			want: Ranks{Self: 2, Count: 3, Basis: "10.0.0.13 read as a number, modulo OPENSHIFT_HA_REPLICA_COUNT 3 = 2 (multicast without a node list)"},
		},
		{
			name: "multicast IPv6: the low 32 bits",
			self: "fd00:bb::11", repl: 2,
			want: Ranks{Self: 1, Count: 2, Basis: "fd00:bb::11 read as a number, modulo OPENSHIFT_HA_REPLICA_COUNT 2 = 1 (multicast without a node list)"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := imageDefaults()
			s.ReplicaCount = tc.repl
			s.Peers = addrs(tc.peers...)
			got, err := RankOf(netip.MustParseAddr(tc.self), s, addrs(tc.nodes...))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("RankOf (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWithoutVIPs: the plan without its lists keeps each group's count
// and everything else, and leaves the plan it came from as it was.
func TestWithoutVIPs(t *testing.T) {
	p := NewPlan(specWith(301, 6), 3)
	before := layout(p)
	q := p.WithoutVIPs()
	total := 0
	for i := range q.Groups {
		g, orig := &q.Groups[i], &p.Groups[i]
		if g.VIPs != nil {
			t.Errorf("group %s kept %d VIPs", g.Name, len(g.VIPs))
		}
		if g.NumVIPs() != len(orig.VIPs) || g.Name != orig.Name || !slices.Equal(g.Order, orig.Order) {
			t.Errorf("group %d: %s order %v with %d VIPs, want %s order %v with %d", i, g.Name, g.Order, g.NumVIPs(), orig.Name, orig.Order, len(orig.VIPs))
		}
		total += g.NumVIPs()
	}
	if total != 301 || q.Ranks != p.Ranks {
		t.Errorf("%d VIPs over %d ranks, want 301 over %d", total, q.Ranks, p.Ranks)
	}
	if after := layout(p); !slices.Equal(before, after) {
		t.Errorf("the plan changed:\n%v\nthen\n%v", before, after)
	}
	if r := q.WithoutVIPs(); r.Groups[0].NumVIPs() != q.Groups[0].NumVIPs() {
		t.Errorf("dropped twice: %d VIPs, want %d", r.Groups[0].NumVIPs(), q.Groups[0].NumVIPs())
	}
}

package main

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/cluster"
)

// TestBGPClusterYAML reads the cluster file of -bgp through the production
// parser for each -family: every master announces the family's VIPs to one
// peer per family, its router's address on the node's link.
func TestBGPClusterYAML(t *testing.T) {
	for _, tt := range []struct {
		family string
		vips   []string
		peers  []string // m2's
	}{
		{family: "4", vips: []string{"198.19.0.5", "198.19.0.7"}, peers: []string{"198.18.2.1"}},
		{family: "6", vips: []string{"fd00:ff::5", "fd00:ff::7"}, peers: []string{"fd00:2::1"}},
		{family: "both", vips: []string{"198.19.0.5", "198.19.0.7", "fd00:ff::5", "fd00:ff::7"}, peers: []string{"198.18.2.1", "fd00:2::1"}},
	} {
		t.Run(tt.family, func(t *testing.T) {
			c, err := cluster.Parse("cluster.yaml", []byte(bgpClusterYAML(3, tt.family, "a note")))
			if err != nil {
				t.Fatal(err)
			}
			p, err := c.PlanFor("m2")
			if err != nil {
				t.Fatal(err)
			}
			if p.BGP == nil {
				t.Fatal("m2 has no BGP speaker")
			}
			var vips, peers []string
			for _, r := range p.BGP.Config.Routes {
				vips = append(vips, r.VIP.String())
			}
			for _, pr := range p.BGP.Config.Peers {
				peers = append(peers, pr.Address.String())
				if v4, v6 := pr.Families(); v4 != pr.Address.Is4() || v6 != pr.Address.Is6() {
					t.Errorf("peer %v: families ipv4 %v, ipv6 %v: want its own family only", pr.Address, v4, v6)
				}
			}
			slices.Sort(vips)
			if diff := cmp.Diff(tt.vips, vips); diff != "" {
				t.Errorf("announced VIPs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.peers, peers); diff != "" {
				t.Errorf("m2's peers (-want +got):\n%s", diff)
			}
			api, ing := bgpVIPs(tt.family)
			if got := fmt.Sprint(slices.Concat(api, ing)); len(slices.Concat(api, ing)) != len(tt.vips) {
				t.Errorf("bgpVIPs(%q) = %s: want %d VIPs", tt.family, got, len(tt.vips))
			}
		})
	}
}

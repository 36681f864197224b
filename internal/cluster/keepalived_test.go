package cluster

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vipstack/vipstack/internal/track"
)

type fakeProbe struct{ name string }

func (fakeProbe) Probe(context.Context) error { return nil }

func TestPlanToKeepalived(t *testing.T) {
	c, err := Load("testdata/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.PlanFor("master-0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := p.Keepalived(c, "eth0", func(s CheckSpec) track.Check { return fakeProbe{s.Name} })
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if len(cfg.Instances) != 2 {
		t.Fatalf("%d instances, want API and INGRESS", len(cfg.Instances))
	}
	api := cfg.Instances[0]
	if api.Name != "managed_API" || api.VRID != 124 || api.Priority != 40 || api.Interface != "eth0" ||
		api.AuthType != "PASS" || api.AuthPass != "managed_api_vip" || api.Version != 2 || api.AdvertInterval != time.Second ||
		api.UnicastSrcIP != netip.MustParseAddr("198.18.0.11") || len(api.UnicastPeers) != 3 ||
		api.VIPs[0].Prefix != netip.MustParsePrefix("198.18.0.5/32") || len(api.TrackScripts) != 2 {
		t.Fatalf("API instance: %+v", api)
	}
	lb := cfg.Scripts["chk_ocp_lb"]
	if lb == nil || lb.Weight != 20 || lb.Rise != 3 || lb.Fall != 2 || lb.Interval != 2*time.Second || lb.Probe.(fakeProbe).name != "chk_ocp_lb" {
		t.Fatalf("chk_ocp_lb: %+v", lb)
	}
	if ing := cfg.Scripts["chk_ingress"]; ing == nil || ing.Weight != 50 {
		t.Fatalf("chk_ingress: %+v", ing)
	}
}

// TestPlanToKeepalivedValidates checks that the configuration the node
// agent runs passes the keepalived reader's rules for every node of every
// testdata cluster, IPv6 and dual-stack included.
func TestPlanToKeepalivedValidates(t *testing.T) {
	for _, file := range []string{"cluster.yaml", "dualstack.yaml", "ipv6.yaml", "seed000.yaml", "seed001.yaml"} {
		c, err := Load("testdata/" + file)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range c.Nodes {
			t.Run(file+"/"+n.Name, func(t *testing.T) {
				p, err := c.PlanFor(n.Name)
				if err != nil {
					t.Fatal(err)
				}
				cfg := p.Keepalived(c, "eth0", func(s CheckSpec) track.Check { return fakeProbe{s.Name} })
				if len(cfg.Instances) == 0 {
					t.Fatal("no instance")
				}
				if err := cfg.Validate(); err != nil {
					t.Errorf("Validate: %v", err)
				}
			})
		}
	}
}

// TestPlanTieBreak: every instance names its rivals at its base priority
// (the bootstrap node is not one of the masters', nor they of it), and
// the priority with every check passing; the engine's configuration
// carries them with a quarter advert as the step, at least 100 ms.
func TestPlanTieBreak(t *testing.T) {
	c, err := Load("testdata/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type tb struct {
		Instance string
		Rivals   []string
		Top      uint8
	}
	for _, tc := range []struct {
		node string
		want []tb
	}{
		{node: "bootstrap", want: []tb{{Instance: "managed_API", Top: 70}}},
		{node: "master-1", want: []tb{
			{Instance: "managed_API", Rivals: []string{"198.18.0.11", "198.18.0.13"}, Top: 40 + WeightLB + WeightLBOrAPI},
			{Instance: "managed_INGRESS", Rivals: []string{"198.18.0.11", "198.18.0.13", "198.18.0.21", "198.18.0.22"}, Top: PrioIngress + WeightIngress},
		}},
		{node: "worker-0", want: []tb{
			{Instance: "managed_INGRESS", Rivals: []string{"198.18.0.11", "198.18.0.12", "198.18.0.13", "198.18.0.22"}, Top: PrioIngress + WeightIngress},
		}},
	} {
		t.Run(tc.node, func(t *testing.T) {
			p, err := c.PlanFor(tc.node)
			if err != nil {
				t.Fatal(err)
			}
			var got []tb
			for _, in := range p.Instances {
				var rivals []string
				for _, r := range in.Rivals {
					rivals = append(rivals, r.String())
				}
				got = append(got, tb{in.Name, rivals, in.Top})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("tie-breaks (-want +got):\n%s", diff)
			}
			cfg := p.Keepalived(c, "eth0", func(s CheckSpec) track.Check { return fakeProbe{s.Name} })
			for i, ic := range cfg.Instances {
				tbk := ic.TieBreak
				if len(p.Instances[i].Rivals) == 0 {
					if tbk.Step != 0 || len(tbk.Rivals) != 0 {
						t.Errorf("%s: tie-break %+v without rivals, want none", ic.Name, tbk)
					}
					continue
				}
				if tbk.Step != time.Second/4 || tbk.Top != p.Instances[i].Top || len(tbk.Rivals) != len(p.Instances[i].Rivals) {
					t.Errorf("%s: tie-break %+v, want the plan's rivals and Top with a 250ms step", ic.Name, tbk)
				}
			}
		})
	}
}

func TestTieBreakStep(t *testing.T) {
	for _, tc := range []struct{ advert, want time.Duration }{
		{advert: time.Second, want: 250 * time.Millisecond},
		{advert: 3 * time.Second, want: 750 * time.Millisecond},
		{advert: 100 * time.Millisecond, want: 100 * time.Millisecond},
		{advert: 400 * time.Millisecond, want: 100 * time.Millisecond},
	} {
		if got := TieBreakStep(tc.advert); got != tc.want {
			t.Errorf("TieBreakStep(%v) = %v, want %v", tc.advert, got, tc.want)
		}
	}
}

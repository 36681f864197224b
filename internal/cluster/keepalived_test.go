package cluster

import (
	"context"
	"net/netip"
	"testing"
	"time"

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

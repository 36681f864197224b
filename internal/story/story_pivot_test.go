//go:build linux

package story_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/demo"
)

// TestStoryBootstrapPivot plays seed 003's bootstrap pivot: while the
// bootstrap node runs, it holds the API and DNS VIPs (70) even against
// masters whose LB and API both answer (65), and the client's API requests
// reach the bootstrap's API server; once it is gone (an orderly teardown,
// or a crash), a master takes both VIPs and the client reaches the masters
// through the VIP and the load balancer.
func TestStoryBootstrapPivot(t *testing.T) {
	tests := []struct {
		name   string
		remove func(n *demo.Node, ctx context.Context) error
	}{
		{name: "teardown", remove: (*demo.Node).Shutdown},
		{name: "crash", remove: func(n *demo.Node, _ context.Context) error { return n.Crash() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startCluster(t, demo.Spec{Bootstrap: true, Masters: 2})
			ctx := t.Context()
			api, dns := vipOf(t, demo.KindAPI), vipOf(t, demo.KindDNS)
			boot := c.Node("bootstrap")
			masters := []*demo.Node{c.Node("master-0"), c.Node("master-1")}
			if err := c.WaitLBs(ctx, masters, masters, stepTimeout); err != nil {
				t.Fatal(err)
			}
			if err := c.WaitPriorities(ctx, demo.KindAPI, map[string]int{"bootstrap": 70, "master-0": 65, "master-1": 65}, stepTimeout); err != nil {
				t.Fatal(err)
			}
			for _, v := range []struct {
				kind     string
				masterAt int
			}{{demo.KindAPI, 65}, {demo.KindDNS, 60}} {
				if _, err := c.WaitHolder(ctx, vipOf(t, v.kind), func(n *demo.Node) bool { return n == boot }, holdFor, stepTimeout); err != nil {
					t.Fatalf("before the pivot, the bootstrap should hold the %s VIP: %v", v.kind, err)
				}
				// Each master knows why: the bootstrap advertises 70.
				for _, m := range masters {
					s, err := m.Status(ctx)
					if err != nil {
						t.Fatal(err)
					}
					var got string
					for _, in := range s.VRRP {
						if strings.HasSuffix(in.Name, "_"+strings.ToUpper(v.kind)) {
							got = fmt.Sprintf("%s prio %d, master %s at %d", in.State, in.Effective, in.Master, in.MasterPriority)
						}
					}
					if want := fmt.Sprintf("BACKUP prio %d, master %s at 70", v.masterAt, boot.Addr); got != want {
						t.Errorf("%s's %s instance: %s, want %s", m.Name, v.kind, got, want)
					}
				}
			}
			apiURL := "https://api." + demo.Domain + ":6443/readyz"
			if body, err := c.Get(ctx, dns, apiURL); err != nil || body != "ok from bootstrap" {
				t.Fatalf("before the pivot: GET %s = %q, %v; want the bootstrap's API", apiURL, body, err)
			}

			if err := tt.remove(boot, ctx); err != nil {
				t.Fatal(err)
			}
			isMaster := func(n *demo.Node) bool { return n != boot }
			for _, kind := range []string{demo.KindAPI, demo.KindDNS} {
				if _, err := c.WaitHolder(ctx, vipOf(t, kind), isMaster, holdFor, 10*time.Second); err != nil {
					t.Fatalf("after the pivot, a master should hold the %s VIP: %v", kind, err)
				}
			}
			// Retried: when both masters claimed the DNS VIP at once, the
			// client's ARP entry may point at the one that yielded until
			// the winner's next gratuitous ARP burst (5 s later).
			err := c.Poll(ctx, stepTimeout, func(ctx context.Context) (bool, string, error) {
				addrs, err := c.Resolve(ctx, dns, "api."+demo.Domain)
				if err != nil {
					return false, err.Error(), nil
				}
				if len(addrs) != 1 || addrs[0] != api {
					return false, "", fmt.Errorf("after the pivot: api.%s through the DNS VIP = %v, want %s", demo.Domain, addrs, api)
				}
				return true, "", nil
			})
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			err = c.Poll(ctx, stepTimeout, func(ctx context.Context) (bool, string, error) {
				body, err := c.Get(ctx, dns, apiURL)
				if err != nil {
					return false, err.Error(), nil
				}
				if !strings.HasPrefix(body, "ok from master-") {
					return false, "", fmt.Errorf("after the pivot: GET %s = %q, want a master's API", apiURL, body)
				}
				seen[body] = true
				return len(seen) == 2, fmt.Sprintf("answers so far: %v; want both masters' (through the LB)", seen), nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

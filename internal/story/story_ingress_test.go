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

// TestStoryIngressFollowsRouter plays the Ingress VIP (20, +50 while the
// node's router answers :1936/healthz/ready) on a master without a router
// and two workers with one: the VIP goes to a worker whose router is ready,
// leaves it when the router reports not ready or stops, stays put while no
// router is ready, and comes back when a router recovers. After each step
// the client's request through the VIP reaches the holder's app.
func TestStoryIngressFollowsRouter(t *testing.T) {
	c := startCluster(t, demo.Spec{Masters: 1, Workers: 2})
	router := func(node string, m demo.RouterMode) func(*demo.Cluster) error {
		return func(c *demo.Cluster) error { return c.Node(node).SetRouter(m) }
	}
	steps := []storyStep{
		{
			name:   "worker-0's router is not ready: worker-1 holds the VIP",
			do:     router("worker-0", demo.RouterNotReady),
			prio:   map[string]int{"master-0": 20, "worker-0": 20, "worker-1": 70},
			holder: "worker-1",
		},
		{
			name:   "worker-0's router is ready again: equal priorities, worker-1 keeps the VIP",
			do:     router("worker-0", demo.RouterReady),
			prio:   map[string]int{"master-0": 20, "worker-0": 70, "worker-1": 70},
			holder: "worker-1", keeps: true,
		},
		{
			name:   "worker-1's router stops: the VIP moves to worker-0",
			do:     router("worker-1", demo.RouterStopped),
			prio:   map[string]int{"master-0": 20, "worker-0": 70, "worker-1": 20},
			holder: "worker-0",
		},
		{
			name:   "worker-0's router is not ready either: nobody outranks worker-0, it keeps the VIP",
			do:     router("worker-0", demo.RouterNotReady),
			prio:   map[string]int{"master-0": 20, "worker-0": 20, "worker-1": 20},
			holder: "worker-0", keeps: true,
		},
		{
			name:   "worker-1's router is back: the VIP moves to worker-1",
			do:     router("worker-1", demo.RouterReady),
			prio:   map[string]int{"master-0": 20, "worker-0": 20, "worker-1": 70},
			holder: "worker-1",
		},
	}
	ingress := "http://" + vipOf(t, demo.KindIngress).String() + "/"
	for i := range steps {
		holder := steps[i].holder
		steps[i].then = func(c *demo.Cluster) error {
			// Polled: the client may need the new holder's gratuitous ARP.
			return c.Poll(t.Context(), 10*time.Second, func(ctx context.Context) (bool, string, error) {
				body, err := c.Get(ctx, vipOf(t, demo.KindDNS), ingress)
				if err != nil || !strings.Contains(body, " "+holder+"'s router") {
					return false, fmt.Sprintf("client GET %s = %q, %v; want the app behind %s's router", ingress, body, err, holder), nil
				}
				return true, "", nil
			})
		}
	}
	playSteps(t, c, demo.KindIngress, steps)
}

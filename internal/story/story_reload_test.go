//go:build linux

package story_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/demo"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestStoryReloadLBPort: on three masters, the cluster file moves the LB to
// another port. Every master's LB listens there and its API VIP redirect
// follows it, so the client still reaches the API through VIP:6443; the
// VRRP checks, which probe the LB's port, see the LB there from their first
// probe, so no priority drops and the VIP stays where it is. Then a file
// that renames the cluster (which would change every VRID) is refused by
// every node, names what it refuses and why, and changes nothing.
//
// Adverts are 1 s apart, not the demo's 100 ms: the test fails on any move
// of the VIP, and on a busy machine a 100 ms master-down interval lets a
// stall of a few hundred milliseconds move it.
func TestStoryReloadLBPort(t *testing.T) {
	c := startCluster(t, demo.Spec{Masters: 3, Advert: time.Second})
	ctx := t.Context()
	masters := []*demo.Node{c.Node("master-0"), c.Node("master-1"), c.Node("master-2")}
	if err := c.WaitLBs(ctx, masters, masters, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitPriorities(ctx, demo.KindAPI, map[string]int{"master-0": 65, "master-1": 65, "master-2": 65}, time.Minute); err != nil {
		t.Fatal(err)
	}
	api := vipOf(t, demo.KindAPI)
	holder, err := c.WaitHolder(ctx, api, func(*demo.Node) bool { return true }, holdFor, stepTimeout)
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("https://%s:6443/readyz", api)
	reaches := func(ctx context.Context) (bool, string, error) {
		body, err := c.Get(ctx, api, url)
		if err != nil {
			return false, err.Error(), nil
		}
		return strings.HasPrefix(body, "ok from "), "answered " + body, nil
	}
	if err := c.Poll(ctx, stepTimeout, reaches); err != nil {
		t.Fatalf("the client does not reach the API through the VIP before the reload: %v", err)
	}

	// steady samples the API VIP's holder and the masters' priorities for
	// d: the holder must stay, and no priority may drop.
	steady := func(what string, d time.Duration) {
		t.Helper()
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			hs, err := c.Holders(api)
			if err != nil {
				t.Fatal(err)
			}
			if len(hs) != 1 || hs[0] != holder {
				t.Fatalf("%s: the API VIP's holders are %v, want only %s", what, names(hs), holder.Name)
			}
			for _, m := range masters {
				in, err := m.Priority(ctx, demo.KindAPI)
				if err != nil {
					t.Fatal(err)
				}
				if in.Priority != 65 {
					t.Fatalf("%s: %s's API priority is %d (failing: %v), want 65 throughout", what, m.Name, in.Priority, in.Down)
				}
			}
		}
	}

	moved := c.Spec.ClusterYAML() + "ports: {lb: 9446}\n"
	if err := c.Rewrite(moved); err != nil {
		t.Fatal(err)
	}
	steady("the LB moves to port 9446", 4*time.Second)
	for _, m := range masters {
		if !strings.Contains(m.Log(), "redirect follows the load balancer to its new port") {
			t.Fatalf("%s did not move its redirect:\n%s", m.Name, testutil.Tail(m.Log(), 20))
		}
	}
	if err := c.Poll(ctx, stepTimeout, reaches); err != nil {
		t.Fatalf("the client does not reach the API through the VIP after the LB moved: %v", err)
	}

	renamed := strings.Replace(moved, "name: "+demo.ClusterName+"\n", "name: demo2\n", 1)
	if renamed == moved {
		t.Fatal("the cluster file has no name line to change")
	}
	if err := c.Rewrite(renamed); err != nil {
		t.Fatal(err)
	}
	for _, m := range masters {
		err := c.Poll(ctx, stepTimeout, func(ctx context.Context) (bool, string, error) {
			s, err := m.Status(ctx)
			if err != nil {
				return false, "", err
			}
			return strings.Contains(s.LoadError, `name: "demo" to "demo2" changes every VRRP instance's name and virtual router ID`),
				fmt.Sprintf("cluster file error %q", s.LoadError), nil
		})
		if err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
	}
	steady("a renamed cluster is refused", 2*time.Second)
	for _, m := range masters {
		if strings.Contains(m.Log(), "demo2_API") {
			t.Fatalf("%s started an instance of the renamed cluster:\n%s", m.Name, testutil.Tail(m.Log(), 20))
		}
	}
	if err := c.Poll(ctx, stepTimeout, reaches); err != nil {
		t.Fatalf("the client does not reach the API through the VIP after the refused rename: %v", err)
	}
}

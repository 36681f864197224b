//go:build linux

package story_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/demo"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestStoryReleaseMovesOnce: three masters of one priority hold the API and
// DNS VIPs; the node agent of the holder is replaced (SIGTERM, then started
// again, as a package upgrade under systemd does) several times. Its
// engine sends priority 0 and the VIPs move to another master, once: from
// outside, the holders sampled every 2 ms show one new sole holder and no
// other node ever holding the VIP, and the node agents' logs show one
// master taking over. Before the tie-break both other masters took over
// after the same Skew_Time and the one with the lower address gave the VIP
// up again (bench/upgrade: a VIP moved twice in 3 of 4 runs).
func TestStoryReleaseMovesOnce(t *testing.T) {
	testnet.RequireRoot(t)
	if testing.Short() {
		t.Skip("skipping the release story in -short mode (a demo cluster, about a minute)")
	}
	bin := buildVipstack(t)
	out := &syncbuf.Buffer{}
	c, err := demo.Start(t.Context(), demo.Spec{Masters: 3, Workers: 1}, demo.Options{Bin: bin, Out: out, Prefix: "vupR", View: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range c.Nodes {
				t.Logf("---- %s's node agent, last lines:\n%s", n.Name, testutil.Tail(n.Log(), 30))
			}
		}
		c.Close()
	})
	ctx := t.Context()
	kinds := []string{demo.KindAPI, demo.KindDNS}
	for _, kind := range kinds {
		if _, err := c.WaitHolder(ctx, vipOf(t, kind), nil, 2*time.Second, time.Minute); err != nil {
			t.Fatalf("%s VIP: %v", kind, err)
		}
	}
	const rounds = 6
	for round := range rounds {
		kind := kinds[round%len(kinds)]
		vip := vipOf(t, kind)
		hs, err := c.Holders(vip)
		if err != nil || len(hs) != 1 {
			t.Fatalf("round %d: %s VIP held by %v (%v), want one node", round+1, kind, names(hs), err)
		}
		stopped := hs[0]
		before := map[string]int{}
		for _, n := range c.Nodes {
			before[n.Name] = masterLines(n, kind)
		}
		// Sample the holders every 2 ms from before the stop until the
		// VIP has a new holder for a while.
		var mu sync.Mutex
		var path []string // sole holders in order
		others := map[string]bool{}
		sctx, stopSampling := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() {
			for sctx.Err() == nil {
				hs, err := c.Holders(vip)
				if err == nil {
					mu.Lock()
					for _, h := range hs {
						if h != stopped {
							others[h.Name] = true
						}
					}
					if len(hs) == 1 && (len(path) == 0 || path[len(path)-1] != hs[0].Name) {
						path = append(path, hs[0].Name)
					}
					mu.Unlock()
				}
				time.Sleep(2 * time.Millisecond)
			}
		})
		time.Sleep(50 * time.Millisecond)
		if err := stopped.Replace(ctx, bin); err != nil {
			t.Fatalf("round %d: %v", round+1, err)
		}
		_, err = c.WaitHolder(ctx, vip, func(n *demo.Node) bool { return n != stopped }, 2*time.Second, time.Minute)
		stopSampling()
		wg.Wait()
		if err != nil {
			t.Fatalf("round %d: %s VIP after %s's replacement: %v", round+1, kind, stopped.Name, err)
		}
		var tookOver []string
		for _, n := range c.Nodes {
			if n != stopped && masterLines(n, kind) > before[n.Name] {
				tookOver = append(tookOver, n.Name)
			}
		}
		t.Logf("round %d: %s's agent replaced; %s VIP path %s; became master: %v", round+1, stopped.Name, kind, strings.Join(path, " to "), tookOver)
		if len(path) > 2 || len(others) > 1 || len(tookOver) != 1 {
			t.Errorf("round %d: the %s VIP moved more than once when %s's agent was replaced: sole holders %s, other nodes that held it %v, nodes whose engine became master %v",
				round+1, kind, stopped.Name, strings.Join(path, " to "), keys(others), tookOver)
		}
	}
}

// masterLines counts the node agent's log lines of its engine entering
// MASTER for the instance of kind.
func masterLines(n *demo.Node, kind string) int {
	inst := "_" + strings.ToUpper(kind)
	count := 0
	for line := range strings.Lines(n.Log()) {
		if strings.Contains(line, "VRRP state change") && strings.Contains(line, "to=MASTER") && strings.Contains(line, inst) {
			count++
		}
	}
	return count
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

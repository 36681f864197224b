//go:build linux

package story_test

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/demo"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// buildVipstack builds the binary the node agents run.
func buildVipstack(t *testing.T) string {
	t.Helper()
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// startCluster starts a demo cluster for a story test; on failure the test
// log gets the live view and the node agents' last lines.
func startCluster(t *testing.T, spec demo.Spec) *demo.Cluster {
	t.Helper()
	testnet.RequireRoot(t)
	bin := buildVipstack(t)
	out := &syncbuf.Buffer{}
	c, err := demo.Start(t.Context(), spec, demo.Options{Bin: bin, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range c.Nodes {
				t.Logf("---- %s's node agent, last lines:\n%s", n.Name, testutil.Tail(n.Log(), 25))
			}
		}
		c.Close()
		if t.Failed() {
			t.Logf("---- live view:\n%s", out.String())
		}
	})
	return c
}

// vipOf returns the address of the VIP of kind.
func vipOf(t *testing.T, kind string) netip.Addr {
	t.Helper()
	for _, v := range demo.VIPs() {
		if v.Kind == kind {
			return v.Addr
		}
	}
	t.Fatalf("no %s VIP", kind)
	return netip.Addr{}
}

// storyStep is one step of a scenario: an action, then the priorities the
// VIP's instance must reach on each node and who must hold the VIP.
type storyStep struct {
	name string
	do   func(c *demo.Cluster) error
	prio map[string]int
	// holder must be the only node holding the VIP once prio is reached,
	// for a while.
	holder string
	// keeps: holder already holds the VIP and must never lose it during
	// the step (nobody outranks it).
	keeps bool
	// then, if set, checks more once the holder is right.
	then func(c *demo.Cluster) error
}

const (
	stepTimeout = 30 * time.Second
	holdFor     = 2 * time.Second
)

// playSteps runs the steps in order, checking state after each.
func playSteps(t *testing.T, c *demo.Cluster, kind string, steps []storyStep) {
	t.Helper()
	vip := vipOf(t, kind)
	ctx := t.Context()
	for i, st := range steps {
		if st.do != nil {
			if err := st.do(c); err != nil {
				t.Fatalf("step %d (%s): %v", i+1, st.name, err)
			}
		}
		// Wait for the priorities; on a "keeps" step the holder must not
		// change meanwhile.
		err := c.Poll(ctx, stepTimeout, func(ctx context.Context) (bool, string, error) {
			if st.keeps {
				hs, err := c.Holders(vip)
				if err != nil {
					return false, "", err
				}
				if len(hs) != 1 || hs[0].Name != st.holder {
					return false, "", fmt.Errorf("%s should stay on %s, but is held by %v", vip, st.holder, names(hs))
				}
			}
			var off []string
			for _, name := range sortedNames(st.prio) {
				in, err := c.Node(name).Priority(ctx, kind)
				if err != nil {
					off = append(off, err.Error())
				} else if in.Priority != st.prio[name] {
					off = append(off, fmt.Sprintf("%s: %d %v, want %d", name, in.Priority, in.Down, st.prio[name]))
				}
			}
			return len(off) == 0, strings.Join(off, "; "), nil
		})
		if err != nil {
			t.Fatalf("step %d (%s): %s priorities: %v", i+1, st.name, kind, err)
		}
		want := c.Node(st.holder)
		if _, err := c.WaitHolder(ctx, vip, func(n *demo.Node) bool { return n == want }, holdFor, stepTimeout); err != nil {
			t.Fatalf("step %d (%s): %v", i+1, st.name, err)
		}
		if st.then != nil {
			if err := st.then(c); err != nil {
				t.Fatalf("step %d (%s): %v", i+1, st.name, err)
			}
		}
		t.Logf("+%.1fs step %d (%s): %s on %s, priorities %v", c.Elapsed().Seconds(), i+1, st.name, kind, st.holder, st.prio)
	}
}

func names(ns []*demo.Node) []string {
	var s []string
	for _, n := range ns {
		s = append(s, n.Name)
	}
	return s
}

func sortedNames(m map[string]int) []string { return slices.Sorted(maps.Keys(m)) }

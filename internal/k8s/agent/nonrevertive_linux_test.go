package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s/k8slab"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestNonRevertive: the lab's group is nonRevertive. The node holding a
// Service's address dies (agent killed, link cut), another takes the
// address over; the node comes back (link restored, agent restarted) and
// the address stays on the node that took it, where TestEndToEnd's
// preempting group moves it back.
func TestNonRevertive(t *testing.T) {
	testnet.RequireRoot(t)
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ns, name, _ := strings.Cut(k8slab.Group, "/")
	l := k8slab.Start(ctx, t, k8slab.Options{Nodes: 3, Prefix: "vsv", Bin: bin, Advert: 200 * time.Millisecond, Client: true,
		Before: func(ctx context.Context, admin client.Client) error {
			var g v1alpha1.VIPGroup
			if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &g); err != nil {
				return err
			}
			g.Spec.NonRevertive = true
			return admin.Update(ctx, &g)
		}})
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range l.Nodes {
				t.Logf("---- agent %s log (tail):\n%s", n.Name, testutil.Tail(n.Log(), 30))
			}
		}
	})
	for _, n := range l.Nodes {
		nameServer(t, n.Host, n.Name)
	}
	if err := l.Admin.Create(ctx, k8slab.NewService("web", k8slab.PoolAddr(0))); err != nil {
		t.Fatal(err)
	}
	vip := k8slab.PoolAddr(0)
	heldBy := func(among []*k8slab.Node) string {
		t.Helper()
		var h string
		testutil.Eventually(t, 30*time.Second, func() error {
			// A killed agent leaves its addresses on its cut link: look
			// only among the nodes that may hold it.
			hs := holders(t, among, vip)
			if len(hs) != 1 {
				return fmt.Errorf("%s held by %v, want one node", vip, hs)
			}
			got, err := fetch(l.Topo.Client, vip)
			if err != nil {
				return err
			}
			if got != hs[0] {
				return fmt.Errorf("answer from %q, the holder is %s", got, hs[0])
			}
			h = hs[0]
			return nil
		})
		return h
	}
	// A killed agent's Lease says MASTER until it expires (30 s after its
	// last renewal): the condition names both nodes until then.
	announcedBy := func(node string) {
		t.Helper()
		testutil.Eventually(t, 75*time.Second, func() error {
			var s corev1.Service
			if err := l.Admin.Get(ctx, client.ObjectKey{Namespace: k8slab.ServiceNamespace, Name: "web"}, &s); err != nil {
				return err
			}
			c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ServiceConditionAnnounced)
			if want := vip.String() + " by " + node; c == nil || c.Message != want {
				return fmt.Errorf("condition %s = %+v, want message %q", v1alpha1.ServiceConditionAnnounced, c, want)
			}
			return nil
		})
	}
	first := heldBy(l.Nodes)
	announcedBy(first)
	var holder *k8slab.Node
	var others []*k8slab.Node
	for _, n := range l.Nodes {
		if n.Name == first {
			holder = n
		} else {
			others = append(others, n)
		}
	}
	if err := holder.KillAgent(); err != nil {
		t.Fatal(err)
	}
	if err := holder.SetCut(true); err != nil {
		t.Fatal(err)
	}
	taker := heldBy(others)
	t.Logf("%s held by %s; %s died, %s took it", vip, first, first, taker)
	// The controller says so, from the agents' status Leases: the
	// Service's condition names the taker, and an Event the move.
	announcedBy(taker)
	testutil.Eventually(t, 30*time.Second, func() error {
		var evs eventsv1.EventList
		if err := l.Admin.List(ctx, &evs, client.InNamespace(k8slab.ServiceNamespace)); err != nil {
			return err
		}
		want := fmt.Sprintf("%s moved from %s to %s", vip, first, taker)
		var seen []string
		for _, e := range evs.Items {
			if e.Regarding.Name == "web" && e.Reason == "Moved" {
				if e.Note == want {
					return nil
				}
				seen = append(seen, e.Note)
			}
		}
		return fmt.Errorf("no Moved Event %q (seen %q)", want, seen)
	})
	if err := holder.SetCut(false); err != nil {
		t.Fatal(err)
	}
	if err := holder.StartAgent(); err != nil {
		t.Fatal(err)
	}
	// The restarted agent runs its own instance again, as BACKUP: it hears
	// the taker and, non-revertive, leaves it the address.
	own := k8slab.Group + "/node/" + first + "/v4"
	testutil.Eventually(t, 30*time.Second, func() error {
		st, err := holder.Status(ctx)
		if err != nil {
			return err
		}
		for _, in := range st.Instances {
			if in.Name == own {
				if in.State != "BACKUP" {
					return fmt.Errorf("%s is %s", own, in.State)
				}
				return nil
			}
		}
		return fmt.Errorf("%s not running yet", own)
	})
	// The restarted agent swept what the killed one left.
	heldBy(l.Nodes)
	// Fifteen advertisement intervals: a preempting node takes its address
	// back within about one (TestEndToEnd).
	for range 15 {
		time.Sleep(200 * time.Millisecond)
		if hs := holders(t, l.Nodes, vip); len(hs) != 1 || hs[0] != taker {
			t.Fatalf("after %s came back: %s held by %v, want %s alone (non-revertive)", first, vip, hs, taker)
		}
	}
	if got, err := fetch(l.Topo.Client, vip); err != nil || got != taker {
		t.Errorf("answer %q (%v), want %s", got, err, taker)
	}
	announcedBy(taker)
}

package agent_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/k8slab"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// nameServer answers every connection on :8080 in the host's namespace
// with the node's name, standing in for kube-proxy and a backend.
func nameServer(t *testing.T, h *testnet.Host, name string) {
	t.Helper()
	h.Greet(t, ":8080", []byte(name))
}

// fetch connects to vip:8080 from the client namespace and returns what
// the node holding the address answers.
func fetch(h *testnet.Host, vip netip.Addr) (string, error) { return k8slab.Fetch(h, vip, 8080) }

// holders returns the names of the nodes whose link carries vip.
func holders(t *testing.T, nodes []*k8slab.Node, vip netip.Addr) []string {
	t.Helper()
	var out []string
	for _, n := range nodes {
		ok, err := n.Host.HasAddr(vip)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			out = append(out, n.Name)
		}
	}
	return out
}

// TestEndToEnd: a real API server, the controller, and agents in three
// network namespaces (a k8slab lab). A LoadBalancer Service's address
// answers from a client namespace; when the node holding it dies (agent
// killed, link cut) another takes it over; the node comes back and takes
// it back; when the Service is deleted the address leaves every node.
func TestEndToEnd(t *testing.T) {
	testnet.RequireRoot(t)
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	// Agents with only the DaemonSet's capabilities, no supervisor; the
	// controller with leader election, as deployed; no Services yet.
	l := k8slab.Start(ctx, t, k8slab.Options{Nodes: 3, Prefix: "vsO", Bin: bin, Advert: 200 * time.Millisecond,
		Caps: true, Client: true, LeaderElect: true})
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range l.Nodes {
				t.Logf("---- agent %s log (tail):\n%s", n.Name, testutil.Tail(n.Log(), 30))
			}
			t.Logf("---- controller log (tail):\n%s", testutil.Tail(l.ControllerLog(), 30))
		}
	})
	admin := l.Admin
	groupNS, groupName, _ := strings.Cut(k8slab.Group, "/")
	group := client.ObjectKey{Namespace: groupNS, Name: groupName}
	mk := func(o client.Object) {
		t.Helper()
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	nodes := l.Nodes
	for _, n := range nodes {
		nameServer(t, n.Host, n.Name)
	}

	// Before any Service: each node is already elected master of its own
	// instance, so the first address goes up without waiting an election.
	for _, n := range nodes {
		own := k8slab.Group + "/node/" + n.Name + "/v4"
		testutil.Eventually(t, 30*time.Second, func() error {
			st, err := n.Status(ctx)
			if err != nil {
				return fmt.Errorf("%s's status: %v", n.Name, err)
			}
			for _, in := range st.Instances {
				if in.Name == own {
					if in.State != "MASTER" || len(in.VIPs) != 0 {
						return fmt.Errorf("%s: %s is %s holding %v, want MASTER holding nothing yet", n.Name, own, in.State, in.VIPs)
					}
					return nil
				}
			}
			return fmt.Errorf("%s runs no %s before the group's first Service", n.Name, own)
		})
	}

	// Each agent runs with exactly the DaemonSet's capabilities.
	want := testnet.CapMask(testnet.CapNetAdmin, testnet.CapNetRaw)
	for _, n := range nodes {
		inh, prm, eff, bnd, amb, err := testnet.Caps(n.AgentPid())
		if err != nil {
			t.Fatal(err)
		}
		if got := []string{inh, prm, eff, bnd, amb}; !slices.Equal(got, []string{want, want, want, want, want}) {
			t.Errorf("agent %s: capability sets inh/prm/eff/bnd/amb %v, want all %s (NET_ADMIN, NET_RAW)", n.Name, got, want)
		}
	}

	mk(k8slab.NewService("web", netip.Addr{}))
	var vip netip.Addr
	testutil.Eventually(t, 30*time.Second, func() error {
		var s corev1.Service
		if err := admin.Get(ctx, client.ObjectKey{Namespace: k8slab.ServiceNamespace, Name: "web"}, &s); err != nil {
			return err
		}
		if len(s.Status.LoadBalancer.Ingress) != 1 {
			return fmt.Errorf("no address yet")
		}
		vip = netip.MustParseAddr(s.Status.LoadBalancer.Ingress[0].IP)
		return nil
	})
	if vip != k8slab.PoolAddr(0) {
		t.Fatalf("address %s, want the pool's first, %s", vip, k8slab.PoolAddr(0))
	}
	// The addresses the later Services may ask for.
	pool := func(from int) (out []netip.Addr) {
		for i := from; i < 10; i++ {
			out = append(out, k8slab.PoolAddr(i))
		}
		return out
	}
	instances := func(t *testing.T) []k8s.Instance {
		t.Helper()
		var g v1alpha1.VIPGroup
		if err := admin.Get(ctx, group, &g); err != nil {
			t.Fatal(err)
		}
		var ins []k8s.Instance
		for _, in := range g.Status.Instances {
			ins = append(ins, k8s.Instance{Name: in.Name, VRID: int(in.VRID), Node: in.Node})
		}
		return ins
	}

	var holder *k8slab.Node
	if !t.Run("the address answers from a client namespace", func(t *testing.T) {
		testutil.Eventually(t, 30*time.Second, func() error {
			hs := holders(t, nodes, vip)
			if len(hs) != 1 {
				var g v1alpha1.VIPGroup
				_ = admin.Get(ctx, group, &g)
				return fmt.Errorf("held by %v, want exactly one node (group status %+v)", hs, g.Status)
			}
			got, err := fetch(l.Topo.Client, vip)
			if err != nil {
				return err
			}
			if got != hs[0] {
				return fmt.Errorf("answer from %q, the holder is %s", got, hs[0])
			}
			for _, n := range nodes {
				if n.Name == got {
					holder = n
				}
			}
			return nil
		})
		t.Logf("%s is held by %s", vip, holder.Name)
	}) {
		t.FailNow()
	}

	// vipstack_agent_announced (MetalLB's metallb_speaker_announced):
	// the holder's agent exports the Service's address, the others not.
	t.Run("the holder announces the address in its metrics", func(t *testing.T) {
		series := fmt.Sprintf(`vipstack_agent_announced{ip=%q,node=%q,service=%q} 1`, vip.String(), holder.Name, k8slab.ServiceNamespace+"/web")
		for _, n := range nodes {
			testutil.Eventually(t, 10*time.Second, func() error {
				text, err := n.Metrics(ctx)
				if err != nil {
					return err
				}
				has := strings.Contains(text, series)
				announces := strings.Contains(text, "vipstack_agent_announced{")
				switch {
				case n == holder && !has:
					return fmt.Errorf("holder %s lacks %s", n.Name, series)
				case n != holder && announces:
					return fmt.Errorf("%s, not the holder, exports vipstack_agent_announced", n.Name)
				case !strings.Contains(text, "vipstack_build_info{") || !strings.Contains(text, "process_cpu_seconds_total"):
					return fmt.Errorf("%s's metrics lack the build information or the process collector", n.Name)
				}
				return nil
			})
		}
	})

	if !t.Run("the holder dies: another node takes over", func(t *testing.T) {
		if err := holder.KillAgent(); err != nil {
			t.Fatal(err)
		}
		if err := holder.SetCut(true); err != nil {
			t.Fatal(err)
		}
		var others []*k8slab.Node
		for _, n := range nodes {
			if n != holder {
				others = append(others, n)
			}
		}
		testutil.Eventually(t, 30*time.Second, func() error {
			hs := holders(t, others, vip)
			if len(hs) != 1 {
				return fmt.Errorf("held by %v among the survivors, want exactly one", hs)
			}
			got, err := fetch(l.Topo.Client, vip)
			if err != nil {
				return err
			}
			if got != hs[0] {
				return fmt.Errorf("answer from %q, the new holder is %s", got, hs[0])
			}
			return nil
		})
	}) {
		t.FailNow()
	}

	// The node comes back: link restored, agent restarted (with the state
	// directory of the killed one, as a DaemonSet pod's hostPath keeps it).
	// Its engine first sweeps the address the killed agent left behind.
	if err := holder.SetCut(false); err != nil {
		t.Fatal(err)
	}
	if err := holder.StartAgent(); err != nil {
		t.Fatal(err)
	}
	if !t.Run("the node comes back and takes its address back", func(t *testing.T) {
		testutil.Eventually(t, 30*time.Second, func() error {
			hs := holders(t, nodes, vip)
			if len(hs) != 1 || hs[0] != holder.Name {
				return fmt.Errorf("held by %v, want %s alone (its preferred master)", hs, holder.Name)
			}
			got, err := fetch(l.Topo.Client, vip)
			if err != nil {
				return err
			}
			if got != holder.Name {
				return fmt.Errorf("answer from %q", got)
			}
			return nil
		})
	}) {
		t.FailNow()
	}

	if !t.Run("a second Service in another instance does not disturb the first", func(t *testing.T) {
		// Pick the second address so that it lands in another instance
		// than the first: that instance changes, the first one's does not
		// and keeps running untouched (the engine keeps unchanged instances
		// on reload). Watch the first address all along.
		ins := instances(t)
		first, _ := k8s.Place(vip, ins)
		second := netip.Addr{}
		for _, a := range pool(1) {
			if in, _ := k8s.Place(a, ins); in.Name != first.Name {
				second = a
				break
			}
		}
		if !second.IsValid() {
			t.Fatal("no address of the pool lands in another instance")
		}
		stop := make(chan struct{})
		moved := make(chan string, 1)
		go func() {
			for {
				select {
				case <-stop:
					close(moved)
					return
				case <-time.After(20 * time.Millisecond):
				}
				if hs := holders(t, nodes, vip); len(hs) != 1 || hs[0] != holder.Name {
					moved <- fmt.Sprintf("%s was held by %v while the second Service came, want %s all along", vip, hs, holder.Name)
					<-stop
					close(moved)
					return
				}
			}
		}()
		mk(k8slab.NewService("api", second))
		err := testutil.Poll(30*time.Second, func() error {
			if hs := holders(t, nodes, second); len(hs) != 1 {
				return fmt.Errorf("%s held by %v, want one node", second, hs)
			}
			_, err := fetch(l.Topo.Client, second)
			return err
		})
		// Keep watching a little after the new instance settled.
		time.Sleep(time.Second)
		close(stop)
		if msg, ok := <-moved; ok {
			t.Error(msg)
		}
		if err != nil {
			t.Fatal(err)
		}
	}) {
		t.FailNow()
	}

	// A new address in the instance of an existing one changes only that
	// instance's address list, which the engine applies in place: the
	// existing address must stay held by the same node throughout.
	if !t.Run("a third Service in the same instance as the first", func(t *testing.T) {
		ins := instances(t)
		first, _ := k8s.Place(vip, ins)
		third := netip.Addr{}
		for _, a := range pool(2) {
			if in, _ := k8s.Place(a, ins); in.Name == first.Name {
				third = a
				break
			}
		}
		if !third.IsValid() {
			t.Skip("no address of the pool lands in the first one's instance")
		}
		var seen []string
		twice := false
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			last := ""
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				list := holders(t, nodes, vip)
				if len(list) != 1 {
					twice = true // two holders, or none: either disturbs the first Service
				}
				hs := fmt.Sprint(list)
				if hs != last {
					seen = append(seen, time.Now().Format("15:04:05.000")+" "+hs)
					last = hs
				}
			}
		}()
		mk(k8slab.NewService("third", third))
		err := testutil.Poll(30*time.Second, func() error {
			if hs := holders(t, nodes, third); len(hs) != 1 {
				return fmt.Errorf("%s held by %v", third, hs)
			}
			return nil
		})
		time.Sleep(3 * time.Second)
		close(stop)
		<-done
		t.Logf("holders of %s while %s joined its instance: %v", vip, third, seen)
		if err != nil {
			t.Fatal(err)
		}
		if twice {
			t.Errorf("%s was not held by exactly one node throughout: %v", vip, seen)
		}
		if hs := holders(t, nodes, vip); len(hs) != 1 || hs[0] != holder.Name {
			t.Errorf("%s is held by %v at the end, want %s", vip, hs, holder.Name)
		}
	}) {
		t.FailNow()
	}

	if !t.Run("delete the Service: the address leaves every node", func(t *testing.T) {
		if err := admin.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: k8slab.ServiceNamespace, Name: "web"}}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 30*time.Second, func() error {
			if hs := holders(t, nodes, vip); len(hs) != 0 {
				return fmt.Errorf("still held by %v", hs)
			}
			return nil
		})
		if _, err := fetch(l.Topo.Client, vip); err == nil {
			t.Errorf("%s still answers", vip)
		}
	}) {
		t.FailNow()
	}
}

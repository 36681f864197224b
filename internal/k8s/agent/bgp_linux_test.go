package agent_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/clusterstatus"
	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/k8slab"
	"github.com/vipstack/vipstack/internal/k8s/k8stest"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/routedlab"
	"github.com/vipstack/vipstack/internal/testutil"
)

// The BGP lab's numbers: the router's and the nodes' ASNs, and the
// client's subnet behind the router.
const (
	bgpRouterASN = 64512
	bgpNodeASN   = 64513
	bgpGroup     = "infra/bgp"
)

// thirdParty holds the CRDs of MetalLB (shared/thirdparty beside the
// repository).
const thirdParty = "../../../../shared/thirdparty/"

var (
	bgpClientNet   = netip.MustParsePrefix("198.18.100.0/24")
	bgpRouterSide  = netip.MustParseAddr("198.18.100.1")
	bgpClientAddr  = netip.MustParseAddr("198.18.100.10")
	bgpClientNet6  = netip.MustParsePrefix("fd00:64::/64")
	bgpRouterSide6 = netip.MustParseAddr("fd00:64::1")
	bgpClientAddr6 = netip.MustParseAddr("fd00:64::10")
)

// bgpLab is a k8slab lab whose client namespace is the router (FRR 8.4:
// zebra, bfdd and bgpd, peering with every node over the lab's bridge)
// and a client namespace behind it, on its own subnet.
type bgpLab struct {
	*k8slab.Lab
	router *routedlab.Lab // Router is the lab's client namespace
	frr    *routedlab.FRR
	client string // the client namespace
	nodeIP map[string]string
	// nodeIP6 is each node's IPv6 address (dual-stack labs only).
	nodeIP6 map[string]string
}

// bgpLabOptions say what a bgpLab has beyond IPv4 peering.
type bgpLabOptions struct {
	prefix string // namespace name prefix
	// dualStack: a dual-stack API server, the Nodes' IPv6 InternalIPs,
	// FRR peering with each node over IPv6 too (IPv6 unicast, ECMP), and
	// the client's IPv6 subnet behind the router.
	dualStack bool
	// bfd: FRR runs BFD (profile fast, 100 ms x 3) with every neighbour.
	bfd bool
}

func sysctlIn(t *testing.T, ns string, kv ...string) {
	t.Helper()
	for _, s := range kv {
		if out, err := exec.Command("ip", "netns", "exec", ns, "sysctl", "-qw", s).CombinedOutput(); err != nil {
			t.Fatalf("sysctl %s in %s: %v: %s", s, ns, err, out)
		}
	}
}

func newBGPLab(t *testing.T, o bgpLabOptions) *bgpLab {
	routedlab.RequireFRR(t)
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	// MetalLB's CRDs, installed before the controller starts, as a
	// cluster migrating from MetalLB's BGP mode has them.
	var crds []*unstructured.Unstructured
	for _, f := range []string{"ipaddresspools", "l2advertisements", "bgpadvertisements", "bgppeers", "bfdprofiles"} {
		path := "metallb/metallb.io_" + f + ".yaml"
		raw, err := os.ReadFile(thirdParty + path)
		if err != nil {
			t.Skipf("third-party test data missing: %v", err)
		}
		crds = append(crds, k8stest.Parse(t, path, raw)...)
	}
	before := func(ctx context.Context, admin client.Client) error {
		k8stest.ApplyCRDs(t, admin, crds)
		return admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "metallb-system"}})
	}
	l := k8slab.Start(ctx, t, k8slab.Options{Nodes: 3, Prefix: o.prefix, Bin: bin, Advert: 200 * time.Millisecond, Client: true, Before: before,
		DualStack: o.dualStack,
		// The lab's pool leaves the MetalLB pool's address (198.18.0.230) out.
		Pool: "198.18.0.200-198.18.0.219"})
	b := &bgpLab{Lab: l, nodeIP: map[string]string{}, nodeIP6: map[string]string{}}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range l.Nodes {
				t.Logf("---- agent %s log (tail):\n%s", n.Name, testutil.Tail(n.Log(), 40))
			}
			t.Logf("---- controller log (tail):\n%s", testutil.Tail(l.ControllerLog(), 20))
		}
	})
	rns := l.Topo.Client.Name
	rip, rip6 := l.Topo.Client.IPv4.Addr(), l.Topo.Client.IPv6.Addr()
	sysctlIn(t, rns, "net.ipv4.ip_forward=1", "net.ipv4.fib_multipath_hash_policy=1")
	if o.dualStack {
		sysctlIn(t, rns, "net.ipv6.conf.all.forwarding=1", "net.ipv6.fib_multipath_hash_policy=1")
	}
	var tag [3]byte
	if _, err := rand.Read(tag[:]); err != nil {
		t.Fatal(err)
	}
	b.client = o.prefix + hex.EncodeToString(tag[:]) + "-c"
	if out, err := exec.Command("ip", "netns", "add", b.client).CombinedOutput(); err != nil {
		t.Fatalf("netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", b.client).Run() })
	steps := [][]string{
		{rns, "link", "add", "c0", "type", "veth", "peer", "name", "eth0", "netns", b.client},
		{rns, "addr", "add", bgpRouterSide.String() + "/24", "dev", "c0"},
		{rns, "link", "set", "c0", "up"},
		{b.client, "link", "set", "lo", "up"},
		{b.client, "addr", "add", bgpClientAddr.String() + "/24", "dev", "eth0"},
		{b.client, "link", "set", "eth0", "up"},
		{b.client, "route", "add", "default", "via", bgpRouterSide.String()},
	}
	if o.dualStack {
		steps = append(steps,
			[]string{rns, "addr", "add", bgpRouterSide6.String() + "/64", "dev", "c0", "nodad"},
			[]string{b.client, "addr", "add", bgpClientAddr6.String() + "/64", "dev", "eth0", "nodad"},
			[]string{b.client, "-6", "route", "add", "default", "via", bgpRouterSide6.String()})
	}
	for _, s := range steps {
		if err := routedlab.IPIn(s[0], s[1:]...); err != nil {
			t.Fatal(err)
		}
	}
	var conf strings.Builder
	fmt.Fprintf(&conf, "router bgp %d\n bgp router-id %v\n no bgp ebgp-requires-policy\n", bgpRouterASN, rip)
	neighbor := func(a, src string) {
		// update-source: bgpd registers its BFD session with the source
		// from the start (internal/bgp's lab says why).
		fmt.Fprintf(&conf, " neighbor %s remote-as %d\n neighbor %s update-source %s\n neighbor %s timers 3 9\n neighbor %s timers connect 1\n", a, bgpNodeASN, a, src, a, a)
		if o.bfd {
			fmt.Fprintf(&conf, " neighbor %s bfd profile fast\n", a)
		}
	}
	for _, n := range l.Nodes {
		a := n.Host.IPv4.Addr().String()
		b.nodeIP[n.Name] = a
		neighbor(a, rip.String())
		// The client's subnet is behind the router. The address is on
		// lo, as kube-proxy makes a node accept its Services' addresses;
		// the node's name server answers on it.
		if err := routedlab.IPIn(n.Host.Name, "route", "add", bgpClientNet.String(), "via", rip.String()); err != nil {
			t.Fatal(err)
		}
		if o.dualStack {
			a6 := n.Host.IPv6.Addr().String()
			b.nodeIP6[n.Name] = a6
			neighbor(a6, rip6.String())
			if err := routedlab.IPIn(n.Host.Name, "-6", "route", "add", bgpClientNet6.String(), "via", rip6.String()); err != nil {
				t.Fatal(err)
			}
		}
		nameServer(t, n.Host, n.Name)
	}
	conf.WriteString(" address-family ipv4 unicast\n  maximum-paths 8\n")
	for _, n := range l.Nodes {
		if a, ok := b.nodeIP6[n.Name]; ok {
			fmt.Fprintf(&conf, "  no neighbor %s activate\n", a)
		}
	}
	conf.WriteString(" exit-address-family\n")
	if o.dualStack {
		conf.WriteString(" address-family ipv6 unicast\n  maximum-paths 8\n")
		for _, n := range l.Nodes {
			fmt.Fprintf(&conf, "  neighbor %s activate\n", b.nodeIP6[n.Name])
		}
		conf.WriteString(" exit-address-family\n")
	}
	conf.WriteString("!\n")
	dir, err := os.MkdirTemp("", o.prefix+"-frr-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	b.router = &routedlab.Lab{Router: rns, Dir: dir}
	bfdConf := ""
	if o.bfd {
		bfdConf = routedlab.BFDProfileFast
	}
	b.frr = b.router.StartFRR(t, conf.String(), bfdConf)
	t.Cleanup(func() {
		if t.Failed() {
			for _, c := range []string{"show bgp ipv4 unicast", "show bgp ipv6 unicast", "show bfd peers brief"} {
				out, _ := b.frr.Vtysh(c)
				t.Logf("---- FRR: %s:\n%s", c, out)
			}
		}
	})
	return b
}

// onLo puts vip on lo of every node, as kube-proxy (IPVS) does for a
// Service's load-balancer address.
func (b *bgpLab) onLo(t *testing.T, vip netip.Addr) {
	t.Helper()
	for _, n := range b.Nodes {
		if err := routedlab.IPIn(n.Host.Name, "addr", "add", netip.PrefixFrom(vip, vip.BitLen()).String(), "dev", "lo"); err != nil {
			t.Fatal(err)
		}
	}
}

// wantVia waits until the router's kernel route to vip goes via exactly
// the nodes named (none: no route).
func (b *bgpLab) wantVia(t *testing.T, vip netip.Addr, timeout time.Duration, nodes ...string) {
	t.Helper()
	addrs := b.nodeIP
	if vip.Is6() {
		addrs = b.nodeIP6
	}
	var want []string
	for _, n := range nodes {
		want = append(want, addrs[n])
	}
	slices.Sort(want)
	testutil.Eventually(t, timeout, func() error {
		got, err := b.router.Nexthops(vip)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("router's route to %v goes via %v, want %v", vip, got, want)
		}
		return nil
	})
}

// reach connects to vip:8080 from the client n times and returns the
// nodes that answered.
func (b *bgpLab) reach(t *testing.T, vip netip.Addr, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for range n {
		err := routedlab.Do(b.client, func() error {
			out, err := fetchAddr(vip)
			if err == nil {
				got[out]++
			}
			return err
		})
		if err != nil {
			t.Fatalf("client to %v:8080: %v", vip, err)
		}
	}
	return got
}

func bgpService(name string, addr netip.Addr, local bool) *corev1.Service {
	s := k8slab.NewService(name, addr)
	s.Annotations[k8s.GroupAnnotation] = bgpGroup
	if local {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}
	return s
}

// readyOn is an EndpointSlice of Service name with one ready endpoint on
// each node given.
func readyOn(name string, nodeIPs map[string]string, nodes ...string) *discoveryv1.EndpointSlice {
	ready := true
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: k8slab.ServiceNamespace, Name: name + "-bgp",
			Labels: map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "vbk-test"}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for _, n := range nodes {
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{nodeIPs[n]},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready}, NodeName: &n})
	}
	port, pname := int32(8080), ""
	sl.Ports = []discoveryv1.EndpointPort{{Name: &pname, Port: &port}}
	return sl
}

// TestBGPKubernetes: the agents of a real API server's lab announce the
// addresses of a BGP group's LoadBalancer Services to FRR: ECMP from
// every node for externalTrafficPolicy Cluster, only from the nodes with
// a ready endpoint for Local, a client behind the router reaches them;
// a deleted Service is withdrawn, a graceful stop withdraws, and an agent
// killed and started again (graceful restart) keeps its route.
func TestBGPKubernetes(t *testing.T) {
	b := newBGPLab(t, bgpLabOptions{prefix: "vbk"})
	ctx := t.Context()
	admin := b.Admin
	mk := func(o client.Object) { t.Helper(); b.create(t, o) }
	gns, gname, _ := strings.Cut(bgpGroup, "/")
	mk(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: k8s.DefaultNamespace}})
	mk(&v1alpha1.VIPGroup{ObjectMeta: metav1.ObjectMeta{Namespace: gns, Name: gname},
		Spec: v1alpha1.VIPGroupSpec{NodeSelector: map[string]string{"vipstack.io/lb": "true"},
			BGP: &v1alpha1.GroupBGP{Communities: []string{"64513:100"}}}})
	mk(&v1alpha1.BGPPeer{ObjectMeta: metav1.ObjectMeta{Namespace: k8s.DefaultNamespace, Name: "frr"},
		Spec: v1alpha1.BGPPeerSpec{PeerAddress: b.Topo.Client.IPv4.Addr().String(), PeerASN: bgpRouterASN, MyASN: bgpNodeASN,
			HoldTimeSeconds: 9, KeepaliveSeconds: 3, GracefulRestartSeconds: 120}})

	cluster, local := k8slab.PoolAddr(0), k8slab.PoolAddr(1)
	b.onLo(t, cluster)
	b.onLo(t, local)
	mk(bgpService("bgp-cluster", cluster, false))
	mk(readyOn("bgp-local", b.nodeIP, "n2"))
	mk(bgpService("bgp-local", local, true))

	t.Run("cluster-policy-ecmp", func(t *testing.T) {
		b.wantVia(t, cluster, 60*time.Second, "n1", "n2", "n3")
		got := b.reach(t, cluster, 30)
		if len(got) < 2 {
			t.Errorf("30 connections to %v all went to %v; want them spread over the nodes (ECMP, L4 hash)", cluster, got)
		}
		out, err := b.frr.Vtysh("show bgp ipv4 unicast " + cluster.String() + "/32")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "64513:100") {
			t.Errorf("FRR's path to %v lacks the group's community 64513:100:\n%s", cluster, out)
		}
	})
	t.Run("local-policy-ready-nodes-only", func(t *testing.T) {
		b.wantVia(t, local, 30*time.Second, "n2")
		if got := b.reach(t, local, 5); got["n2"] != 5 {
			t.Errorf("connections to %v answered by %v, want n2 only", local, got)
		}
		sl := readyOn("bgp-local", b.nodeIP, "n2", "n3")
		var cur discoveryv1.EndpointSlice
		if err := admin.Get(ctx, client.ObjectKeyFromObject(sl), &cur); err != nil {
			t.Fatal(err)
		}
		cur.Endpoints = sl.Endpoints
		if err := admin.Update(ctx, &cur); err != nil {
			t.Fatal(err)
		}
		b.wantVia(t, local, 30*time.Second, "n2", "n3")
	})
	t.Run("status", func(t *testing.T) {
		st, err := b.Nodes[0].Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.BGP == nil || len(st.BGP.Peers) != 1 || st.BGP.Peers[0].Session != "established" {
			t.Fatalf("n1's status BGP = %+v, want one established peer", st.BGP)
		}
		var sawLocal bool
		for _, r := range st.BGP.Routes {
			if r.Prefix == local.String()+"/32" {
				sawLocal = true
				if r.Announced || !strings.Contains(r.Reason, "no ready endpoint") {
					t.Errorf("n1's route %s: announced %v, reason %q; want not announced, no ready endpoint", r.Prefix, r.Announced, r.Reason)
				}
			}
		}
		if !sawLocal {
			t.Errorf("n1's status lists no route for %v: %+v", local, st.BGP.Routes)
		}
		// vipstack status --cluster: from the agents' status Leases.
		testutil.Eventually(t, 10*time.Second, func() error {
			v, err := clusterstatus.FromKubernetes(ctx, admin, k8s.DefaultNamespace, time.Now())
			if err != nil {
				return err
			}
			for _, x := range v.BGP {
				if x.Address == cluster.String() {
					if !slices.Equal(x.Announcers, []string{"n1", "n2", "n3"}) {
						return fmt.Errorf("the cluster view's BGP VIP %s: announcers %v, want n1 n2 n3", x.Address, x.Announcers)
					}
					return nil
				}
			}
			return fmt.Errorf("the cluster view has no BGP VIP %v: %+v (problems %q)", cluster, v.BGP, v.Problems)
		})
		m, err := b.Nodes[0].Metrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`vipstack_bgp_session_up{peer="` + b.Topo.Client.IPv4.Addr().String() + `",peer_asn="64512"} 1`,
			`vipstack_bgp_vip_announced{role="service lab/bgp-cluster",vip="` + cluster.String() + `"} 1`} {
			if !strings.Contains(m, want) {
				t.Errorf("n1's metrics lack %s", want)
			}
		}
	})
	t.Run("graceful-restart-keeps-route", func(t *testing.T) {
		n1 := b.Nodes[0]
		if err := n1.KillAgent(); err != nil {
			t.Fatal(err)
		}
		// bgpd keeps n1's path as stale (graceful restart, 120 s) rather
		// than waiting for the 9 s hold time to remove it.
		time.Sleep(12 * time.Second)
		got, err := b.router.Nexthops(cluster)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(got, b.nodeIP["n1"]) {
			t.Fatalf("12 s after kill -9 of n1's agent the route to %v goes via %v; want n1 kept (graceful restart)", cluster, got)
		}
		if err := n1.StartAgent(); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 60*time.Second, func() error {
			st, err := n1.Status(ctx)
			if err != nil {
				return err
			}
			if st.BGP == nil || len(st.BGP.Peers) != 1 || st.BGP.Peers[0].Session != "established" {
				return fmt.Errorf("n1's BGP status %+v, want an established peer", st.BGP)
			}
			return nil
		})
		b.wantVia(t, cluster, 30*time.Second, "n1", "n2", "n3")
	})
	t.Run("handoff-keeps-route", func(st *testing.T) { bgpHandoffKeepsRoute(st, t, b, cluster) })
	t.Run("graceful-stop-withdraws", func(t *testing.T) {
		if err := b.Nodes[2].TermAgent(20 * time.Second); err != nil {
			t.Fatal(err)
		}
		// Well within the 9 s hold time: the withdrawal, not the timer.
		b.wantVia(t, cluster, 3*time.Second, "n1", "n2")
		b.wantVia(t, local, 3*time.Second, "n2")
		if err := b.Nodes[2].StartAgent(); err != nil {
			t.Fatal(err)
		}
		b.wantVia(t, cluster, 60*time.Second, "n1", "n2", "n3")
	})
	t.Run("service-delete-withdraws", func(t *testing.T) {
		if err := admin.Delete(ctx, bgpService("bgp-cluster", cluster, false)); err != nil {
			t.Fatal(err)
		}
		b.wantVia(t, cluster, 30*time.Second)
		b.wantVia(t, local, 5*time.Second, "n2", "n3")
	})
	// MetalLB's BGP objects as MetalLB's documentation writes them, in
	// place of vipstack's BGPPeer: the controller makes the group and the
	// peer, and the routes are the same.
	t.Run("metallb-objects", func(t *testing.T) {
		if err := admin.Delete(ctx, &v1alpha1.BGPPeer{ObjectMeta: metav1.ObjectMeta{Namespace: k8s.DefaultNamespace, Name: "frr"}}); err != nil {
			t.Fatal(err)
		}
		b.wantVia(t, local, 10*time.Second)
		mlb := k8sObjects(t, fmt.Sprintf(`apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata: {name: bgp, namespace: metallb-system}
spec:
  addresses: [198.18.0.230/32]
---
apiVersion: metallb.io/v1beta1
kind: BGPAdvertisement
metadata: {name: bgp, namespace: metallb-system}
spec:
  ipAddressPools: [bgp]
  communities: ["64513:200"]
---
apiVersion: metallb.io/v1beta2
kind: BGPPeer
metadata: {name: frr, namespace: metallb-system}
spec:
  myASN: %d
  peerASN: %d
  peerAddress: %v
  holdTime: 9s
  keepaliveTime: 3s
`, bgpNodeASN, bgpRouterASN, b.Topo.Client.IPv4.Addr()))
		testutil.Eventually(t, 30*time.Second, func() error { return k8stest.Apply(ctx, admin, mlb, false) })
		vip := netip.MustParseAddr("198.18.0.230")
		b.onLo(t, vip)
		s := k8slab.NewService("mlb-bgp", netip.Addr{})
		s.Annotations = map[string]string{"metallb.io/address-pool": "bgp"}
		mk(s)
		b.wantVia(t, vip, 60*time.Second, "n1", "n2", "n3")
		b.wantVia(t, local, 10*time.Second, "n2", "n3")
		if got := b.reach(t, vip, 10); len(got) == 0 {
			t.Errorf("no answer from %v", vip)
		}
		out, err := b.frr.Vtysh("show bgp ipv4 unicast " + vip.String() + "/32")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "64513:200") {
			t.Errorf("FRR's path to %v lacks the BGPAdvertisement's community 64513:200:\n%s", vip, out)
		}
		var made v1alpha1.BGPPeer
		if err := admin.Get(ctx, client.ObjectKey{Namespace: k8s.DefaultNamespace, Name: "metallb-frr"}, &made); err != nil {
			t.Fatalf("the BGPPeer made for MetalLB's: %v", err)
		}
		if made.Spec.HoldTimeSeconds != 9 || made.Spec.KeepaliveSeconds != 3 {
			t.Errorf("made BGPPeer's timers %d/%d, want MetalLB's 9s/3s", made.Spec.HoldTimeSeconds, made.Spec.KeepaliveSeconds)
		}
	})
}

// bgpHandoffKeepsRoute starts a second agent on n2, as a rolling update's
// surge pod, and stops the serving one: it hands the node over and, its
// peer having graceful restart, leaves its BGP routes to FRR instead of
// withdrawing them; the successor's session takes them over. FRR's route
// to vip, sampled every 20 ms, goes via n2 throughout. The successor
// serves n2 until parent ends.
func bgpHandoffKeepsRoute(t, parent *testing.T, b *bgpLab, vip netip.Addr) {
	n2 := b.Nodes[1]
	cmd, err := n2.AgentCommand()
	if err != nil {
		t.Fatal(err)
	}
	succ, err := peers.StartCmd(n2.Host, cmd)
	if err != nil {
		t.Fatal(err)
	}
	parent.Cleanup(func() {
		if parent.Failed() {
			parent.Logf("---- successor on n2, log (tail):\n%s", testutil.Tail(succ.Log(), 40))
		}
		_ = succ.Kill()
	})
	logSays := func(what string, log func() string, s string) func() error {
		return func() error {
			if !strings.Contains(log(), s) {
				return fmt.Errorf("%s's log does not say %q yet", what, s)
			}
			return nil
		}
	}
	testutil.Eventually(t, 60*time.Second, logSays("n2's serving agent", n2.Log, "is ready to take over"))
	var (
		mu      sync.Mutex
		missing []string // samples without n2's next hop
		samples int
	)
	sampleCtx, stopSampling := context.WithCancel(t.Context())
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for sampleCtx.Err() == nil {
			got, err := b.router.Nexthops(vip)
			mu.Lock()
			samples++
			if err != nil || !slices.Contains(got, b.nodeIP["n2"]) {
				missing = append(missing, fmt.Sprintf("%s: %v %v", time.Now().Format("15:04:05.000"), got, err))
			}
			mu.Unlock()
			time.Sleep(20 * time.Millisecond) // bounded by sampleCtx
		}
	}()
	if err := n2.TermAgent(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(n2.Log(), "leaving the BGP routes to the routers' graceful restart") {
		t.Errorf("n2's old agent does not say it left its routes to graceful restart:\n%s", testutil.Tail(n2.Log(), 20))
	}
	testutil.Eventually(t, 30*time.Second, logSays("the successor", succ.Log, "BGP speaker started"))
	testutil.Eventually(t, 60*time.Second, func() error {
		out, err := b.frr.Vtysh("show bgp neighbors " + b.nodeIP["n2"] + " json")
		if err != nil {
			return err
		}
		if !strings.Contains(out, `"bgpState":"Established"`) {
			return fmt.Errorf("FRR's session with n2 is not established again yet")
		}
		return nil
	})
	time.Sleep(time.Second) // the successor's UPDATE and end-of-RIB replace the stale path
	stopSampling()
	<-sampled
	mu.Lock()
	defer mu.Unlock()
	if len(missing) > 0 || samples < 10 {
		t.Errorf("%d of %d samples of FRR's route to %v lack n2 during the hand-off: %q", len(missing), samples, vip, missing)
	}
	if strings.Contains(n2.Log(), "bgp: withdrew") {
		t.Errorf("n2's old agent withdrew its routes on a hand-off")
	}
}

// bgpPool6 is the dual-stack lab's IPv6 IPPool.
var bgpPool6 = netip.MustParsePrefix("fd00:ee::/120")

// TestBGPKubernetesDualStackBFD: on a dual-stack cluster, each agent
// peers with FRR over IPv4 and over IPv6 (a BGPPeer per family, both
// with BFD at 100 ms x 3 against a 9 s hold time). An IPv6 Service's
// address and both addresses of a dual-stack Service are installed by
// FRR as ECMP via every node (IPv6 routes with the nodes' IPv6 next
// hops, MP-BGP), and the client reaches them over each family. BFD is Up
// on both sides (FRR's bfdd, the agents' status and metrics); a node cut
// off the network has its routes taken out by BFD (FRR's neighbour says
// it went down for BFD), and they come back when it is plugged in again.
func TestBGPKubernetesDualStackBFD(t *testing.T) {
	b := newBGPLab(t, bgpLabOptions{prefix: "vb6", dualStack: true, bfd: true})
	ctx := t.Context()
	admin := b.Admin
	mk := func(o client.Object) { t.Helper(); b.create(t, o) }
	gns, gname, _ := strings.Cut(bgpGroup, "/")
	mk(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: k8s.DefaultNamespace}})
	mk(&v1alpha1.VIPGroup{ObjectMeta: metav1.ObjectMeta{Namespace: gns, Name: gname},
		Spec: v1alpha1.VIPGroupSpec{NodeSelector: map[string]string{"vipstack.io/lb": "true"}, BGP: &v1alpha1.GroupBGP{}}})
	auto := false
	mk(&v1alpha1.IPPool{ObjectMeta: metav1.ObjectMeta{Name: "lab6"}, Spec: v1alpha1.IPPoolSpec{Addresses: []string{bgpPool6.String()}, AutoAssign: &auto}})
	rip, rip6 := b.Topo.Client.IPv4.Addr(), b.Topo.Client.IPv6.Addr()
	for name, addr := range map[string]netip.Addr{"frr": rip, "frr6": rip6} {
		mk(&v1alpha1.BGPPeer{ObjectMeta: metav1.ObjectMeta{Namespace: k8s.DefaultNamespace, Name: name},
			Spec: v1alpha1.BGPPeerSpec{PeerAddress: addr.String(), PeerASN: bgpRouterASN, MyASN: bgpNodeASN,
				HoldTimeSeconds: 9, KeepaliveSeconds: 3, BFD: &v1alpha1.PeerBFD{IntervalMilliseconds: 100, Multiplier: 3}}})
	}

	only6 := bgpPool6.Addr().Next()
	dual4, dual6 := k8slab.PoolAddr(2), only6.Next()
	for _, a := range []netip.Addr{only6, dual4, dual6} {
		b.onLo(t, a)
	}
	single, require := corev1.IPFamilyPolicySingleStack, corev1.IPFamilyPolicyRequireDualStack
	s6 := bgpService("bgp-v6", only6, false)
	s6.Spec.IPFamilyPolicy, s6.Spec.IPFamilies = &single, []corev1.IPFamily{corev1.IPv6Protocol}
	mk(s6)
	sd := bgpService("bgp-dual", netip.Addr{}, false)
	sd.Annotations[k8s.IPsAnnotation] = dual4.String() + "," + dual6.String()
	sd.Spec.IPFamilyPolicy = &require
	mk(sd)

	t.Run("ipv6-ecmp-over-ipv6-peering", func(t *testing.T) {
		b.wantVia(t, only6, 60*time.Second, "n1", "n2", "n3")
		got := b.reach(t, only6, 30)
		if len(got) < 2 {
			t.Errorf("30 connections to %v all went to %v; want them spread over the nodes (ECMP, L4 hash)", only6, got)
		}
		// Learnt over the IPv6 sessions, with each node's global IPv6
		// address as the next hop.
		out, err := b.frr.Vtysh("show bgp ipv6 unicast " + netip.PrefixFrom(only6, 128).String())
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range b.Nodes {
			if a := b.nodeIP6[n.Name]; !strings.Contains(out, a+" from "+a) {
				t.Errorf("FRR has no path to %v from %s with next hop %s:\n%s", only6, n.Name, a, out)
			}
		}
	})
	t.Run("dual-stack-service", func(t *testing.T) {
		b.wantVia(t, dual4, 30*time.Second, "n1", "n2", "n3")
		b.wantVia(t, dual6, 30*time.Second, "n1", "n2", "n3")
		for _, a := range []netip.Addr{dual4, dual6} {
			if got := b.reach(t, a, 5); len(got) == 0 {
				t.Errorf("no answer from %v", a)
			}
		}
	})
	t.Run("bfd-up-both-sides", func(t *testing.T) {
		testutil.Eventually(t, 30*time.Second, func() error {
			up, err := b.bfdUp()
			if err != nil {
				return err
			}
			for _, m := range []map[string]string{b.nodeIP, b.nodeIP6} {
				for n, a := range m {
					if !up[a] {
						return fmt.Errorf("FRR's bfdd has no single-hop session up with %s (%s): up %v", n, a, up)
					}
				}
			}
			return nil
		})
		for _, n := range b.Nodes {
			st, err := n.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.BGP == nil || len(st.BGP.Peers) != 2 {
				t.Fatalf("%s's status BGP = %+v, want two peers", n.Name, st.BGP)
			}
			for _, p := range st.BGP.Peers {
				if p.Session != "established" || p.BFD != "up" {
					t.Errorf("%s's peer %s: session %q, BFD %q; want established, up", n.Name, p.Address, p.Session, p.BFD)
				}
			}
		}
		m, err := b.Nodes[0].Metrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range []netip.Addr{rip, rip6} {
			if want := `vipstack_bgp_bfd_up{peer="` + a.String() + `"} 1`; !strings.Contains(m, want) {
				t.Errorf("n1's metrics lack %s", want)
			}
		}
	})
	// n3's cable is pulled: no FIN or NOTIFICATION reaches the router, so
	// without BFD its routes would stay until the 9 s hold time.
	t.Run("node-cut-removed-by-bfd", func(t *testing.T) {
		n3 := b.Nodes[2]
		start := time.Now()
		if err := n3.SetCut(true); err != nil {
			t.Fatal(err)
		}
		b.wantVia(t, only6, 30*time.Second, "n1", "n2")
		took6 := time.Since(start)
		b.wantVia(t, dual4, 30*time.Second, "n1", "n2")
		took4 := time.Since(start)
		t.Logf("FRR removed the cut node's routes: IPv6 after %v, IPv4 after %v (BFD detection 300 ms, hold time 9 s; polled every %v)",
			took6.Round(time.Millisecond), took4.Round(time.Millisecond), testutil.Interval)
		b.wantBFDReset(t, "n3")
		testutil.Eventually(t, 10*time.Second, func() error {
			st, err := n3.Status(ctx)
			if err != nil {
				return err
			}
			if st.BGP == nil {
				return fmt.Errorf("cut n3 runs no BGP speaker")
			}
			for _, p := range st.BGP.Peers {
				if p.BFD == "up" || p.Session == "established" {
					return fmt.Errorf("cut n3's peer %s: session %q, BFD %q; want BFD down and the session with it", p.Address, p.Session, p.BFD)
				}
			}
			return nil
		})
		if err := n3.SetCut(false); err != nil {
			t.Fatal(err)
		}
		b.wantVia(t, only6, 60*time.Second, "n1", "n2", "n3")
		b.wantVia(t, dual4, 30*time.Second, "n1", "n2", "n3")
	})
	// n2's agent is stopped (SIGSTOP), as a machine descheduled: the
	// kernel keeps its TCP sessions open, so only BFD can tell; when it
	// runs again its sessions come back.
	t.Run("agent-stalled-removed-by-bfd", func(t *testing.T) {
		n2 := b.Nodes[1]
		start := time.Now()
		if err := n2.Stall(true); err != nil {
			t.Fatal(err)
		}
		resumed := false
		defer func() {
			if !resumed {
				_ = n2.Stall(false)
			}
		}()
		b.wantVia(t, only6, 30*time.Second, "n1", "n3")
		took6 := time.Since(start)
		b.wantVia(t, dual4, 30*time.Second, "n1", "n3")
		took4 := time.Since(start)
		t.Logf("FRR removed the stalled agent's routes: IPv6 after %v, IPv4 after %v (BFD detection 300 ms, hold time 9 s; polled every %v)",
			took6.Round(time.Millisecond), took4.Round(time.Millisecond), testutil.Interval)
		b.wantBFDReset(t, "n2")
		if err := n2.Stall(false); err != nil {
			t.Fatal(err)
		}
		resumed = true
		b.wantVia(t, only6, 60*time.Second, "n1", "n2", "n3")
		b.wantVia(t, dual4, 30*time.Second, "n1", "n2", "n3")
	})
	// Graceful restart on a peer with BFD: FRR 8.4 resets the session
	// when BFD goes Down but, as graceful-restart helper, keeps the
	// node's routes as stale for the restart time, so BFD removes
	// nothing (docs/kubernetes.md says to choose one of the two).
	t.Run("bfd-with-graceful-restart-keeps-route", func(t *testing.T) {
		var p v1alpha1.BGPPeer
		if err := admin.Get(ctx, client.ObjectKey{Namespace: k8s.DefaultNamespace, Name: "frr"}, &p); err != nil {
			t.Fatal(err)
		}
		p.Spec.GracefulRestartSeconds = 120
		if err := admin.Update(ctx, &p); err != nil {
			t.Fatal(err)
		}
		n1 := b.nodeIP["n1"]
		testutil.Eventually(t, 60*time.Second, func() error {
			out, err := b.frr.Vtysh("show bgp neighbors " + n1)
			if err != nil {
				return err
			}
			if !strings.Contains(out, "BGP state = Established") || !strings.Contains(out, "Graceful Restart Capability: advertised and received") {
				return fmt.Errorf("FRR's session with n1 is not established with graceful restart yet")
			}
			if up, err := b.bfdUp(); err != nil || !up[n1] {
				return fmt.Errorf("FRR's BFD with n1 is not up (%v)", err)
			}
			return nil
		})
		b.wantVia(t, dual4, 30*time.Second, "n1", "n2", "n3")
		if err := b.Nodes[0].KillAgent(); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 30*time.Second, func() error {
			out, err := b.frr.Vtysh("show bgp neighbors " + n1)
			if err != nil {
				return err
			}
			if !strings.Contains(out, "BFD down received") {
				return fmt.Errorf("FRR's session with n1 has not gone down for BFD yet")
			}
			return nil
		})
		out, err := b.frr.Vtysh("show bgp ipv4 unicast " + dual4.String() + "/32")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "(stale)") {
			t.Errorf("FRR's paths to %v after n1's BFD went Down have none stale (graceful restart):\n%s", dual4, out)
		}
		b.wantVia(t, dual4, time.Second, "n1", "n2", "n3")
	})
}

// wantBFDReset checks that FRR's sessions with node (both families)
// last went down for BFD: bgpd sends a Cease with subcode 10, BFD Down
// (RFC 9384), when its BFD session goes Down.
func (b *bgpLab) wantBFDReset(t *testing.T, node string) {
	t.Helper()
	for _, a := range []string{b.nodeIP[node], b.nodeIP6[node]} {
		out, err := b.frr.Vtysh("show bgp neighbors " + a + " json")
		if err != nil {
			t.Fatal(err)
		}
		var nb map[string]struct {
			Reason string `json:"lastNotificationReason"`
		}
		if err := json.Unmarshal([]byte(out), &nb); err != nil {
			t.Fatalf("show bgp neighbors %s json: %v: %s", a, err, out)
		}
		if got := nb[a].Reason; got != "Cease/BFD Down" {
			t.Errorf("FRR's session with %s (%s) last went down for %q, want Cease/BFD Down", node, a, got)
		}
	}
}

// bfdUp returns the peers of FRR's single-hop BFD sessions that are up.
func (b *bgpLab) bfdUp() (map[string]bool, error) {
	out, err := b.frr.Vtysh("show bfd peers json")
	if err != nil {
		return nil, err
	}
	var peers []struct {
		Multihop bool   `json:"multihop"`
		Peer     string `json:"peer"`
		Status   string `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &peers); err != nil {
		return nil, fmt.Errorf("show bfd peers json: %v: %s", err, out)
	}
	up := map[string]bool{}
	for _, p := range peers {
		if !p.Multihop && p.Status == "up" {
			up[p.Peer] = true
		}
	}
	return up, nil
}

// k8sObjects parses YAML documents.
func k8sObjects(t *testing.T, y string) []*unstructured.Unstructured {
	return k8stest.Parse(t, "test objects", []byte(y))
}

// fetchAddr connects to vip:8080 from the calling thread's namespace and
// returns what the node answers (its name).
func fetchAddr(vip netip.Addr) (string, error) {
	conn, err := net.DialTimeout("tcp", netip.AddrPortFrom(vip, 8080).String(), time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	out, err := io.ReadAll(conn)
	return string(out), err
}

// create makes o through the admin client; one already there is kept.
func (b *bgpLab) create(t *testing.T, o client.Object) {
	t.Helper()
	if err := b.Admin.Create(t.Context(), o); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create %T %s: %v", o, o.GetName(), err)
	}
}

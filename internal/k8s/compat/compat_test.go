package compat

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/vipstack/vipstack/internal/allocator"
	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

func ranges(rs []allocator.Range) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.First.String() + "-" + r.Last.String()
	}
	return out
}

func TestConvertPool(t *testing.T) {
	no := false
	for _, tc := range []struct {
		name       string
		spec       IPAddressPoolSpec
		want       []string
		auto       bool
		namespaces []string
		err        string
	}{
		{name: "cidr and range", spec: IPAddressPoolSpec{Addresses: []string{"198.18.0.0/30", "198.18.1.1-198.18.1.5", "fd00::/126"}},
			want: []string{"198.18.0.0-198.18.0.3", "198.18.1.1-198.18.1.5", "fd00::-fd00::3"}, auto: true},
		{name: "autoAssign off", spec: IPAddressPoolSpec{Addresses: []string{"198.18.0.1"}, AutoAssign: &no},
			want: []string{"198.18.0.1-198.18.0.1"}},
		{name: "avoidBuggyIPs across two /24s", spec: IPAddressPoolSpec{Addresses: []string{"198.18.0.0/23", "fd00::/127"}, AvoidBuggyIPs: true},
			want: []string{"198.18.0.1-198.18.0.254", "198.18.1.1-198.18.1.254", "fd00::-fd00::1"}, auto: true},
		{name: "avoidBuggyIPs inside one /24", spec: IPAddressPoolSpec{Addresses: []string{"198.18.0.250-198.18.1.3"}, AvoidBuggyIPs: true},
			want: []string{"198.18.0.250-198.18.0.254", "198.18.1.1-198.18.1.3"}, auto: true},
		{name: "avoidBuggyIPs of only .255 leaves nothing", spec: IPAddressPoolSpec{Addresses: []string{"198.18.0.255"}, AvoidBuggyIPs: true},
			auto: true},
		{name: "namespaces", spec: IPAddressPoolSpec{Addresses: []string{"198.18.0.1"}, ServiceAllocation: &ServiceAllocation{Namespaces: []string{"a", "b"}}},
			want: []string{"198.18.0.1-198.18.0.1"}, auto: true, namespaces: []string{"a", "b"}},
		{name: "bad address", spec: IPAddressPoolSpec{Addresses: []string{"198.18.0.300"}}, err: "spec.addresses[0]"},
		{name: "no addresses", spec: IPAddressPoolSpec{}, err: "spec.addresses: empty"},
		{name: "priority", spec: IPAddressPoolSpec{Addresses: []string{"198.18.0.1"}, ServiceAllocation: &ServiceAllocation{Priority: 10}},
			err: "spec.serviceAllocation.priority 10: not implemented"},
		{name: "namespaceSelectors", spec: IPAddressPoolSpec{Addresses: []string{"198.18.0.1"}, ServiceAllocation: &ServiceAllocation{
			NamespaceSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"a": "b"}}}}}, err: "namespaceSelectors: not implemented"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &IPAddressPool{Spec: tc.spec}
			p.Namespace, p.Name = "metallb-system", "p"
			got, err := ConvertPool(p)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != "metallb.io/metallb-system/p" || got.AutoAssign != tc.auto {
				t.Errorf("name %q autoAssign %v, want metallb.io/metallb-system/p %v", got.Name, got.AutoAssign, tc.auto)
			}
			if diff := cmp.Diff(tc.want, ranges(got.Ranges), cmp.Comparer(func(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") })); diff != "" {
				t.Errorf("ranges (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.namespaces, got.Namespaces); diff != "" {
				t.Errorf("namespaces (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServiceSelectorsAreORed(t *testing.T) {
	p := &IPAddressPool{Spec: IPAddressPoolSpec{Addresses: []string{"198.18.0.1"}, ServiceAllocation: &ServiceAllocation{
		ServiceSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"app": "a"}}, {MatchLabels: map[string]string{"app": "b"}}}}}}
	got, err := ConvertPool(p)
	if err != nil {
		t.Fatal(err)
	}
	for labels, want := range map[string]bool{"a": true, "b": true, "c": false} {
		if g := got.Selector.Matches(map[string]string{"app": labels}); g != want {
			t.Errorf("app=%s: matches %v, want %v", labels, g, want)
		}
	}
}

func TestConvertL2(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec L2AdvertisementSpec
		want v1alpha1.VIPGroupSpec
		err  string
	}{
		{name: "empty: every node, the InternalIP's interface"},
		{name: "one selector, one interface", spec: L2AdvertisementSpec{
			NodeSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"role": "edge"}}}, Interfaces: []string{"eth1"}},
			want: v1alpha1.VIPGroupSpec{NodeSelector: map[string]string{"role": "edge"}, Interface: "eth1"}},
		{name: "two selectors", spec: L2AdvertisementSpec{NodeSelectors: []metav1.LabelSelector{{}, {}}}, err: "spec.nodeSelectors: 2 selectors"},
		{name: "matchExpressions", spec: L2AdvertisementSpec{NodeSelectors: []metav1.LabelSelector{{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: metav1.LabelSelectorOpExists}}}}},
			err: "matchExpressions: not implemented"},
		{name: "two interfaces", spec: L2AdvertisementSpec{Interfaces: []string{"eth0", "eth1"}}, err: "one interface per group"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ConvertL2(&L2Advertisement{Spec: tc.spec})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func pool(name string, labels map[string]string, addrs ...string) IPAddressPool {
	p := IPAddressPool{Spec: IPAddressPoolSpec{Addresses: addrs}}
	p.Namespace, p.Name, p.Labels = "metallb-system", name, labels
	return p
}

func adv(name string, spec L2AdvertisementSpec) L2Advertisement {
	a := L2Advertisement{Spec: spec}
	a.Namespace, a.Name = "metallb-system", name
	return a
}

// TestMetalLBMapping: which group serves each pool.
func TestMetalLBMapping(t *testing.T) {
	pools := []IPAddressPool{
		pool("blue", map[string]string{"zone": "b"}, "198.18.2.0/24"),
		pool("red", nil, "198.18.1.0/24"),
		pool("green", nil, "198.18.3.0/24"),
		pool("bad", nil, "nonsense"),
	}
	advs := []L2Advertisement{
		adv("z-all", L2AdvertisementSpec{}),
		adv("b-by-label", L2AdvertisementSpec{IPAddressPoolSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"zone": "b"}}},
			NodeSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"zone": "b"}}}}),
		adv("a-red", L2AdvertisementSpec{IPAddressPools: []string{"red"}, Interfaces: []string{"eth1"}}),
		adv("refused", L2AdvertisementSpec{Interfaces: []string{"a", "b"}}),
	}
	ps, gs, probs := MetalLB(pools, advs)
	got := map[string]string{}
	for _, p := range ps {
		got[p.Name] = p.Group.String()
	}
	// blue: z-all's nodes (every node) take in b-by-label's. red: a-red
	// and z-all announce on different interfaces; a-red, the first,
	// serves it, and z-all is told.
	want := map[string]string{
		"metallb.io/metallb-system/blue":  "metallb-system/metallb-z-all",
		"metallb.io/metallb-system/red":   "metallb-system/metallb-a-red",
		"metallb.io/metallb-system/green": "metallb-system/metallb-z-all",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pool -> group (-want +got):\n%s", diff)
	}
	var gotGroups []string
	for _, g := range gs {
		gotGroups = append(gotGroups, g.Ref.String()+" iface="+g.Spec.Interface)
	}
	if diff := cmp.Diff([]string{"metallb-system/metallb-a-red iface=eth1", "metallb-system/metallb-b-by-label iface=", "metallb-system/metallb-z-all iface="}, gotGroups); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	var gotProbs []string
	for _, p := range probs {
		gotProbs = append(gotProbs, p.Kind+" "+p.Name)
	}
	if diff := cmp.Diff([]string{"L2Advertisement refused", "IPAddressPool bad", "L2Advertisement z-all"}, gotProbs); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if msg := probs[2].Error(); !strings.Contains(msg, "selects IPAddressPool red, which L2Advertisement a-red serves") {
		t.Errorf("problem %q, want it to name the pool and the advertisement that serves it", msg)
	}
}

// TestMetalLBSeveralAdvertisements: of several advertisements of one
// pool, the one whose nodes and interface take in the others' serves it;
// when none does, the first, and the others are told.
func TestMetalLBSeveralAdvertisements(t *testing.T) {
	nodes := func(kv ...string) []metav1.LabelSelector {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return []metav1.LabelSelector{{MatchLabels: m}}
	}
	tests := []struct {
		name      string
		advs      []L2Advertisement
		wantGroup string
		wantProbs []string
	}{
		{name: "one", advs: []L2Advertisement{adv("a", L2AdvertisementSpec{NodeSelectors: nodes("zone", "a")})}, wantGroup: "metallb-a"},
		{name: "the later takes in the first", advs: []L2Advertisement{
			adv("a", L2AdvertisementSpec{NodeSelectors: nodes("zone", "a", "rack", "1")}),
			adv("b", L2AdvertisementSpec{NodeSelectors: nodes("zone", "a")}),
		}, wantGroup: "metallb-b"},
		{name: "same nodes", advs: []L2Advertisement{
			adv("a", L2AdvertisementSpec{NodeSelectors: nodes("zone", "a")}),
			adv("b", L2AdvertisementSpec{NodeSelectors: nodes("zone", "a")}),
		}, wantGroup: "metallb-a"},
		{name: "every node takes in any", advs: []L2Advertisement{
			adv("a", L2AdvertisementSpec{NodeSelectors: nodes("zone", "a")}),
			adv("b", L2AdvertisementSpec{NodeSelectors: nodes("zone", "b")}),
			adv("c", L2AdvertisementSpec{}),
		}, wantGroup: "metallb-c"},
		{name: "disjoint nodes", advs: []L2Advertisement{
			adv("a", L2AdvertisementSpec{NodeSelectors: nodes("zone", "a")}),
			adv("b", L2AdvertisementSpec{NodeSelectors: nodes("zone", "b")}),
		}, wantGroup: "metallb-a", wantProbs: []string{"L2Advertisement b"}},
		{name: "other interface", advs: []L2Advertisement{
			adv("a", L2AdvertisementSpec{}),
			adv("b", L2AdvertisementSpec{Interfaces: []string{"eth1"}}),
		}, wantGroup: "metallb-a", wantProbs: []string{"L2Advertisement b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps, _, probs := MetalLB([]IPAddressPool{pool("p", nil, "198.18.1.0/24")}, tt.advs)
			if len(ps) != 1 || ps[0].Group.Name != tt.wantGroup {
				t.Errorf("pools %+v, want p served by %s", ps, tt.wantGroup)
			}
			var got []string
			for _, p := range probs {
				got = append(got, p.Kind+" "+p.Name)
			}
			if diff := cmp.Diff(tt.wantProbs, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKubeVIP(t *testing.T) {
	for _, tc := range []struct {
		name  string
		data  map[string]string
		want  map[string][]string // pool -> ranges
		probs []string
	}{
		{name: "global range", data: map[string]string{"range-global": "198.18.0.200-198.18.0.202"},
			want: map[string][]string{"kube-vip.io/global": {"198.18.0.200-198.18.0.202"}}},
		{name: "namespace cidrs and a list", data: map[string]string{"cidr-default": "198.18.0.200/29", "cidr-plunder": "198.18.0.208/29,198.18.1.0/30"},
			want: map[string][]string{"kube-vip.io/namespace/default": {"198.18.0.200-198.18.0.207"},
				"kube-vip.io/namespace/plunder": {"198.18.0.208-198.18.0.215", "198.18.1.0-198.18.1.3"}}},
		{name: "search-order desc is reported, ranges kept", data: map[string]string{"range-global": "198.18.0.1-198.18.0.2", "search-order": "desc"},
			want:  map[string][]string{"kube-vip.io/global": {"198.18.0.1-198.18.0.2"}},
			probs: []string{`data.search-order "desc": not implemented`}},
		{name: "sharing and unknown keys", data: map[string]string{"allow-share-default": "true", "foo": "x"},
			want:  map[string][]string{},
			probs: []string{"data.allow-share-default: address sharing is not implemented", "data.foo: unknown key"}},
		{name: "cidr given as a range", data: map[string]string{"cidr-global": "198.18.0.1-198.18.0.2", "range-x": "198.18.0.0/30"},
			want:  map[string][]string{},
			probs: []string{`data.cidr-global: "198.18.0.1-198.18.0.2" is not a CIDR block`, `data.range-x: "198.18.0.0/30" is a CIDR block`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, probs := KubeVIP(tc.data)
			got := map[string][]string{}
			for _, p := range ps {
				got[p.Name] = ranges(p.Ranges)
				if p.Group != KubeVIPGroup() {
					t.Errorf("pool %s served by %s, want %s", p.Name, p.Group, KubeVIPGroup())
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pools (-want +got):\n%s", diff)
			}
			if len(probs) != len(tc.probs) {
				t.Fatalf("problems %v, want %d", probs, len(tc.probs))
			}
			for i, p := range probs {
				if !strings.Contains(p.Error(), tc.probs[i]) {
					t.Errorf("problem %d: %v, want one containing %q", i, p, tc.probs[i])
				}
			}
		})
	}
}

// TestReadOrder: kube-vip's namespace pools before its global one, then
// MetalLB's; the address-pool annotations.
func TestReadOrder(t *testing.T) {
	no := false
	manual := pool("manual", nil, "198.18.9.0/30")
	manual.Spec.AutoAssign = &no
	c := Read("metallb-system", []IPAddressPool{pool("a", nil, "198.18.5.0/30"), manual}, nil,
		map[string]string{"range-global": "198.18.0.1-198.18.0.2", "cidr-zz": "198.18.1.0/30"})
	if diff := cmp.Diff([]string{"kube-vip.io/namespace/zz", "kube-vip.io/global", "metallb.io/metallb-system/a"}, c.Candidates()); diff != "" {
		t.Errorf("candidates (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		ann  map[string]string
		want string
		err  string
	}{
		{ann: nil},
		{ann: map[string]string{MetalLBPoolAnnotation: "manual"}, want: "metallb.io/metallb-system/manual"},
		{ann: map[string]string{LegacyMetalLBPoolAnnotation: "a"}, want: "metallb.io/metallb-system/a"},
		{ann: map[string]string{MetalLBPoolAnnotation: "a", LegacyMetalLBPoolAnnotation: "manual"}, err: "remove one"},
	} {
		got, _, err := c.PoolRequest(tc.ann)
		if (err != nil) != (tc.err != "") || (err != nil && !strings.Contains(err.Error(), tc.err)) || got != tc.want {
			t.Errorf("PoolRequest(%v) = %q, %v; want %q, error containing %q", tc.ann, got, err, tc.want, tc.err)
		}
	}
	if g := c.GroupOfPool("kube-vip.io/global"); g != (k8s.GroupRef{Namespace: "kube-system", Name: "kube-vip"}) {
		t.Errorf("group of kube-vip's global pool: %s", g)
	}
}

// TestThirdPartySamples reads MetalLB's and kube-vip's own sample objects.
func TestThirdPartySamples(t *testing.T) {
	b, err := os.ReadFile("../../../../shared/thirdparty/metallb/simple_pool_adv_l2.yaml")
	if err != nil {
		t.Skipf("MetalLB's sample is not here: %v", err)
	}
	var pools []IPAddressPool
	var advs []L2Advertisement
	for _, doc := range strings.Split(string(b), "\n---") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil || m == nil {
			continue
		}
		switch m["kind"] {
		case "IPAddressPool":
			var p IPAddressPool
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &p); err != nil {
				t.Fatal(err)
			}
			pools = append(pools, p)
		case "L2Advertisement":
			var a L2Advertisement
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &a); err != nil {
				t.Fatal(err)
			}
			advs = append(advs, a)
		}
	}
	c := Read("metallb-system", pools, advs, nil)
	if len(c.Problems) > 0 {
		t.Fatalf("problems: %v", c.Problems)
	}
	if len(c.Pools) != 1 || c.Pools[0].Group.String() != "metallb-system/metallb-empty" || len(c.Pools[0].Ranges) != 3 {
		t.Fatalf("pools %+v, want one with 3 ranges served by metallb-system/metallb-empty", c.Pools)
	}
	for _, f := range []string{"kubevip-range-global.yaml", "kubevip-cidr-global.yaml", "kubevip-configmap-0.1.yaml"} {
		b, err := os.ReadFile("../../../../shared/thirdparty/kube-vip/" + f)
		if err != nil {
			t.Fatal(err)
		}
		var cm struct {
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal(b, &cm); err != nil {
			t.Fatal(err)
		}
		ps, probs := KubeVIP(cm.Data)
		if len(ps) == 0 {
			t.Errorf("%s: no pool", f)
		}
		for _, p := range probs {
			if !strings.Contains(p.Error(), "search-order") {
				t.Errorf("%s: %v", f, p)
			}
		}
	}
}

func TestCanShare(t *testing.T) {
	mk := func(key string, local bool, sel string, ports ...corev1.ServicePort) *corev1.Service {
		s := &corev1.Service{}
		s.Namespace, s.Name = "demo", "s"
		if key != "" {
			s.Annotations = map[string]string{MetalLBSharedAnnotation: key}
		}
		if local {
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		}
		s.Spec.Selector = map[string]string{"app": sel}
		s.Spec.Ports = ports
		return s
	}
	tcp := func(p int32) corev1.ServicePort { return corev1.ServicePort{Port: p} }
	udp := func(p int32) corev1.ServicePort { return corev1.ServicePort{Port: p, Protocol: corev1.ProtocolUDP} }
	legacy := mk("", false, "x", tcp(53))
	legacy.Annotations = map[string]string{LegacyMetalLBSharedAnnotation: "dns"}
	for _, tc := range []struct {
		name string
		a, b *corev1.Service
		err  string
	}{
		{name: "dns on TCP and UDP", a: mk("dns", false, "x", tcp(53)), b: mk("dns", false, "y", udp(53))},
		{name: "legacy and current key", a: legacy, b: mk("dns", false, "y", udp(53))},
		{name: "same port", a: mk("k", false, "x", tcp(80)), b: mk("k", false, "y", tcp(443), tcp(80)), err: "uses port 80/TCP too"},
		{name: "other key", a: mk("k", false, "x", tcp(80)), b: mk("j", false, "x", tcp(81)), err: `has the sharing key "k", not "j"`},
		{name: "holder has no key", a: mk("", false, "x", tcp(80)), b: mk("k", false, "x", tcp(81)), err: "which holds it, has no"},
		{name: "policies differ", a: mk("k", true, "x", tcp(80)), b: mk("k", false, "x", tcp(81)), err: "externalTrafficPolicy Local, not Cluster"},
		{name: "Local, same selector", a: mk("k", true, "x", tcp(80)), b: mk("k", true, "x", tcp(81))},
		{name: "Local, other selector", a: mk("k", true, "x", tcp(80)), b: mk("k", true, "y", tcp(81)), err: "Local with another selector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CanShare(tc.a, tc.b)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("CanShare: %v, want error containing %q", err, tc.err)
			}
		})
	}
}

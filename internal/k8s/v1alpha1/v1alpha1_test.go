package v1alpha1

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vipstack/vipstack/internal/allocator"
)

func TestVIPGroupSpecValidate(t *testing.T) {
	tests := []struct {
		name    string
		spec    VIPGroupSpec
		wantErr []string
	}{
		{name: "defaults", spec: VIPGroupSpec{}},
		{name: "v2 whole seconds", spec: VIPGroupSpec{VRRPVersion: 2, AdvertIntervalMilliseconds: 3000, Interface: "bond0.100"}},
		{name: "v3 centiseconds", spec: VIPGroupSpec{AdvertIntervalMilliseconds: 50}},
		{name: "everything wrong", spec: VIPGroupSpec{VRRPVersion: 2, AdvertIntervalMilliseconds: 1500, Interface: "a/b", ExcludedVRIDs: []int32{0, 256}},
			wantErr: []string{
				`spec.interface: "a/b": want a Linux interface name`,
				"spec.advertIntervalMilliseconds: 1500: VRRPv2 wants whole seconds from 1000 to 255000",
				"spec.excludedVRIDs[0]: 0: want 1 to 255",
				"spec.excludedVRIDs[1]: 256: want 1 to 255",
			}},
		{name: "version 4", spec: VIPGroupSpec{VRRPVersion: 4}, wantErr: []string{"spec.vrrpVersion: 4: want 2 or 3"}},
		{name: "v2 password", spec: VIPGroupSpec{VRRPVersion: 2, AuthPassSecretRef: &SecretKeyRef{Name: "vrrp", Key: "password"}}},
		{name: "password with v3", spec: VIPGroupSpec{AuthPassSecretRef: &SecretKeyRef{Name: "vrrp", Key: "password"}},
			wantErr: []string{"spec.authPassSecretRef: vrrp/password: VRRP authentication exists in version 2 only: set vrrpVersion 2"}},
		{name: "password without a key", spec: VIPGroupSpec{VRRPVersion: 2, AuthPassSecretRef: &SecretKeyRef{Name: "vrrp"}},
			wantErr: []string{"spec.authPassSecretRef: {Name:vrrp Key:}: want the name of a Secret in the group's namespace and the key holding the password"}},
		{name: "non-revertive", spec: VIPGroupSpec{NonRevertive: true}},
		{name: "preempt delay", spec: VIPGroupSpec{PreemptDelayMilliseconds: 5000}},
		{name: "non-revertive with a delay", spec: VIPGroupSpec{NonRevertive: true, PreemptDelayMilliseconds: 5000},
			wantErr: []string{"spec.preemptDelayMilliseconds: 5000: has no effect with nonRevertive"}},
		{name: "delay too long", spec: VIPGroupSpec{PreemptDelayMilliseconds: 1000001},
			wantErr: []string{"spec.preemptDelayMilliseconds: 1000001: want 0 to 1000000"}},
		{name: "link", spec: VIPGroupSpec{Interface: "eth1", Link: "rack-a.lan_2"}},
		{name: "bad link", spec: VIPGroupSpec{Interface: "eth1", Link: "-a b"},
			wantErr: []string{`spec.link: "-a b": want a name of 1 to 63 letters, digits, '.', '_' or '-'`}},
		{name: "v3 interval too long", spec: VIPGroupSpec{AdvertIntervalMilliseconds: 41000},
			wantErr: []string{"spec.advertIntervalMilliseconds: 41000: VRRPv3 wants 10 to 40950 in steps of 10"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if diff := cmp.Diff(tt.wantErr, strings.Split(err.Error(), "\n"), cmp.Comparer(func(a, b string) bool {
				return strings.HasPrefix(a, b) || strings.HasPrefix(b, a)
			})); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSameLink: two groups may reuse VRIDs only when both name an
// interface, the names differ, and so do their links.
func TestSameLink(t *testing.T) {
	tests := []struct {
		name string
		a, b VIPGroupSpec
		want bool
	}{
		{name: "both on the InternalIP interface", want: true},
		{name: "one on the InternalIP interface", a: VIPGroupSpec{Interface: "eth1"}, want: true},
		{name: "one interface", a: VIPGroupSpec{Interface: "eth1"}, b: VIPGroupSpec{Interface: "eth1"}, want: true},
		{name: "two interfaces", a: VIPGroupSpec{Interface: "eth1"}, b: VIPGroupSpec{Interface: "eth2"}, want: false},
		{name: "two interfaces on one link", a: VIPGroupSpec{Interface: "eth1", Link: "lan"}, b: VIPGroupSpec{Interface: "ens4", Link: "lan"}, want: true},
		{name: "a link named as the other's interface", a: VIPGroupSpec{Interface: "ens4", Link: "eth1"}, b: VIPGroupSpec{Interface: "eth1"}, want: true},
		{name: "two links", a: VIPGroupSpec{Interface: "eth1", Link: "lan-a"}, b: VIPGroupSpec{Interface: "ens4", Link: "lan-b"}, want: false},
		{name: "one interface named on two links", a: VIPGroupSpec{Interface: "eth1", Link: "lan-a"}, b: VIPGroupSpec{Interface: "eth1", Link: "lan-b"}, want: true},
		{name: "a link without an interface", a: VIPGroupSpec{Link: "lan-a"}, b: VIPGroupSpec{Interface: "eth1", Link: "lan-b"}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SameLink(&tt.a, &tt.b); got != tt.want {
				t.Errorf("SameLink(%+v, %+v) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
			if got := SameLink(&tt.b, &tt.a); got != tt.want {
				t.Errorf("SameLink(%+v, %+v) = %v, want %v (not symmetric)", tt.b, tt.a, got, tt.want)
			}
		})
	}
}

func TestIPPoolPool(t *testing.T) {
	f := false
	tests := []struct {
		name    string
		spec    IPPoolSpec
		want    []string // ranges
		auto    bool
		wantErr string
	}{
		{name: "default auto", spec: IPPoolSpec{Addresses: []string{"198.18.0.0/30", "fd00::1-fd00::9"}},
			want: []string{"198.18.0.0/30", "fd00::1-fd00::9"}, auto: true},
		{name: "manual, one address", spec: IPPoolSpec{Addresses: []string{"198.18.0.5"}, AutoAssign: &f},
			want: []string{"198.18.0.5"}},
		{name: "garbage", spec: IPPoolSpec{Addresses: []string{"banana"}},
			wantErr: `spec.addresses[0]: range "banana": want a CIDR block`},
		{name: "range backwards", spec: IPPoolSpec{Addresses: []string{"198.18.0.9-198.18.0.1"}},
			wantErr: "spec.addresses[0]: range \"198.18.0.9-198.18.0.1\": the range ends (198.18.0.1) before it starts (198.18.0.9)"},
		{name: "bad selector", spec: IPPoolSpec{Addresses: []string{"198.18.0.0/30"},
			ServiceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}},
			wantErr: "spec.serviceSelector:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &IPPool{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: tt.spec}
			got, err := p.Pool()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var rs []string
			for _, r := range got.Ranges {
				rs = append(rs, r.String())
			}
			if diff := cmp.Diff(tt.want, rs); diff != "" {
				t.Errorf("ranges (-want +got):\n%s", diff)
			}
			if got.AutoAssign != tt.auto {
				t.Errorf("AutoAssign = %v", got.AutoAssign)
			}
		})
	}
	sel := &IPPool{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: IPPoolSpec{Addresses: []string{"198.18.0.0/30"},
		ServiceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "edge"}}}}
	p, err := sel.Pool()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Admits(allocator.Service{Key: "a/b", Namespace: "a", Labels: map[string]string{"tier": "edge"}}); err != nil {
		t.Errorf("matching labels refused: %v", err)
	}
	if err := p.Admits(allocator.Service{Key: "a/c", Namespace: "a"}); err == nil || !strings.Contains(err.Error(), `match "tier=edge"`) {
		t.Errorf("non-matching labels: %v", err)
	}
}

func TestDeepCopy(t *testing.T) {
	tr := true
	g := &VIPGroup{Spec: VIPGroupSpec{NodeSelector: map[string]string{"a": "b"}, ExcludedVRIDs: []int32{1}, AuthPassSecretRef: &SecretKeyRef{Name: "s", Key: "k"}},
		Status: VIPGroupStatus{Instances: []GroupInstance{{Name: "node/n1", VRID: 1}}, Conditions: []metav1.Condition{{Type: "Ready"}}}}
	c := g.DeepCopy()
	c.Spec.NodeSelector["a"] = "x"
	c.Spec.ExcludedVRIDs[0] = 9
	c.Spec.AuthPassSecretRef.Name = "x"
	c.Status.Instances[0].VRID = 9
	c.Status.Conditions[0].Type = "x"
	if g.Spec.NodeSelector["a"] != "b" || g.Spec.ExcludedVRIDs[0] != 1 || g.Spec.AuthPassSecretRef.Name != "s" || g.Status.Instances[0].VRID != 1 || g.Status.Conditions[0].Type != "Ready" {
		t.Errorf("VIPGroup copy shares memory with the original: %+v", g)
	}
	p := &IPPool{Spec: IPPoolSpec{Addresses: []string{"a"}, AutoAssign: &tr, Namespaces: []string{"n"},
		ServiceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"k": "v"}}}}
	q := p.DeepCopyObject().(*IPPool)
	q.Spec.Addresses[0] = "x"
	*q.Spec.AutoAssign = false
	q.Spec.Namespaces[0] = "x"
	q.Spec.ServiceSelector.MatchLabels["k"] = "x"
	if p.Spec.Addresses[0] != "a" || !*p.Spec.AutoAssign || p.Spec.Namespaces[0] != "n" || p.Spec.ServiceSelector.MatchLabels["k"] != "v" {
		t.Errorf("IPPool copy shares memory with the original: %+v", p.Spec)
	}
}

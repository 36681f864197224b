package compat

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

func TestConvertKeepalivedGroup(t *testing.T) {
	pw := &PasswordAuth{SecretKey: "pw"}
	pw.SecretRef.Name = "vrrp"
	pwDefault := &PasswordAuth{}
	pwDefault.SecretRef.Name = "vrrp"
	ref := func(key string) *v1alpha1.SecretKeyRef { return &v1alpha1.SecretKeyRef{Name: "vrrp", Key: key} }
	for _, tc := range []struct {
		name  string
		spec  KeepalivedGroupSpec
		want  v1alpha1.VIPGroupSpec
		notes []string // substrings, one per note, in order
		err   string
	}{
		{name: "the seed's group", spec: KeepalivedGroupSpec{Interface: "ens3",
			NodeSelector: map[string]string{"node-role.kubernetes.io/loadbalancer": ""}, BlacklistRouterIDs: []int{2, 1, 2}},
			want: v1alpha1.VIPGroupSpec{Interface: "ens3", NodeSelector: map[string]string{"node-role.kubernetes.io/loadbalancer": ""},
				ExcludedVRIDs: []int32{1, 2}}},
		{name: "unicast", spec: KeepalivedGroupSpec{Interface: "eth0", UnicastEnabled: true},
			want: v1alpha1.VIPGroupSpec{Interface: "eth0", Unicast: true}},
		{name: "password auth speaks VRRPv2", spec: KeepalivedGroupSpec{Interface: "eth0", PasswordAuth: pw},
			want: v1alpha1.VIPGroupSpec{Interface: "eth0", VRRPVersion: 2, AuthPassSecretRef: ref("pw")}},
		{name: "password key defaults to password", spec: KeepalivedGroupSpec{Interface: "eth0", PasswordAuth: pwDefault},
			want: v1alpha1.VIPGroupSpec{Interface: "eth0", VRRPVersion: 2, AuthPassSecretRef: ref("password")}},
		{name: "verbatim vrrp_version", spec: KeepalivedGroupSpec{Interface: "eth0", VerbatimConfig: map[string]string{"vrrp_version": "2"}},
			want: v1alpha1.VIPGroupSpec{Interface: "eth0", VRRPVersion: 2}},
		{name: "verbatim keys not implemented and not applicable are notes",
			spec: KeepalivedGroupSpec{Interface: "eth0", VerbatimConfig: map[string]string{"vrrp_garp_master_delay": "10", "router_id": "x"}},
			want: v1alpha1.VIPGroupSpec{Interface: "eth0"},
			notes: []string{"spec.verbatimConfig.router_id: concerns the operator's keepalived process only; not applicable",
				`spec.verbatimConfig.vrrp_garp_master_delay "10": not implemented by vipstack (keys implemented: vrrp_version)`}},
		{name: "image and daemonset annotations are not applicable",
			spec: KeepalivedGroupSpec{Interface: "eth0", Image: "registry.redhat.io/openshift4/ose-keepalived-ipfailover",
				DaemonsetAnnotations: map[string]string{"b": "1", "a": "2"}},
			want: v1alpha1.VIPGroupSpec{Interface: "eth0"},
			notes: []string{"spec.image registry.redhat.io/openshift4/ose-keepalived-ipfailover: the operator's keepalived image; not applicable",
				"spec.daemonsetAnnotations a, b: annotations of the operator's DaemonSet; not applicable"}},
		{name: "interfaceFromIP without interface", spec: KeepalivedGroupSpec{InterfaceFromIP: "198.18.0.1"},
			want:  v1alpha1.VIPGroupSpec{},
			notes: []string{"spec.interfaceFromIP 198.18.0.1: not implemented by vipstack (the interface used to reach an address); the interface holding each node's InternalIP is used"}},
		{name: "interfaceFromIP with interface", spec: KeepalivedGroupSpec{Interface: "eth1", InterfaceFromIP: "198.18.0.1"},
			want:  v1alpha1.VIPGroupSpec{Interface: "eth1"},
			notes: []string{"spec.interface eth1 is used"}},
		{name: "bad interfaceFromIP", spec: KeepalivedGroupSpec{InterfaceFromIP: "nope"}, err: `spec.interfaceFromIP "nope": not an IP address`},
		{name: "blacklisted VRID out of range", spec: KeepalivedGroupSpec{Interface: "eth0", BlacklistRouterIDs: []int{0, 256}},
			err: "spec.blacklistRouterIDs[0]: 0: want a VRID from 1 to 255"},
		{name: "bad vrrp_version", spec: KeepalivedGroupSpec{Interface: "eth0", VerbatimConfig: map[string]string{"vrrp_version": "4"}},
			err: `spec.verbatimConfig.vrrp_version "4": want 2 or 3`},
		{name: "vrrp_version 3 with a password", spec: KeepalivedGroupSpec{Interface: "eth0", PasswordAuth: pw, VerbatimConfig: map[string]string{"vrrp_version": "3"}},
			err: "VRRPv3 has no authentication"},
		{name: "password without a Secret", spec: KeepalivedGroupSpec{Interface: "eth0", PasswordAuth: &PasswordAuth{}},
			err: "spec.passwordAuth.secretRef.name: empty"},
		{name: "bad interface name", spec: KeepalivedGroupSpec{Interface: "a/b"}, err: "spec.interface"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &KeepalivedGroup{Spec: tc.spec}
			g.Namespace, g.Name = "keepalived-operator", "keepalivedgroup-workers"
			got := ConvertKeepalivedGroup(g)
			if tc.err != "" {
				if got.Err == nil || !strings.Contains(got.Err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", got.Err, tc.err)
				}
				return
			}
			if got.Err != nil {
				t.Fatal(got.Err)
			}
			if diff := cmp.Diff(tc.want, got.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if len(got.Notes) != len(tc.notes) {
				t.Fatalf("notes %v, want %d containing %q", got.Notes, len(tc.notes), tc.notes)
			}
			for i, n := range got.Notes {
				if !strings.Contains(n.Error(), tc.notes[i]) {
					t.Errorf("note %d: %v, want one containing %q", i, n, tc.notes[i])
				}
			}
		})
	}
}

// TestKeepalivedGroupsSample reads the operator's own sample (testdata,
// from its repository) as the controller does: it is served by a VIPGroup
// of its namespace and name, labelled for the operator, with the image
// reported as not applicable.
func TestKeepalivedGroupsSample(t *testing.T) {
	b, err := os.ReadFile("testdata/keepalived-operator/redhatcop_v1alpha1_keepalivedgroup.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var g KeepalivedGroup
	if err := yaml.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	g.Namespace = "keepalived-operator"
	bad := KeepalivedGroup{Spec: KeepalivedGroupSpec{Interface: "eth0", BlacklistRouterIDs: []int{300}}}
	bad.Namespace, bad.Name = "keepalived-operator", "bad"
	var c Config
	c.AddKeepalived([]KeepalivedGroup{g, bad}, nil)
	if len(c.Groups) != 1 {
		t.Fatalf("groups %+v, want one", c.Groups)
	}
	got := c.Groups[0]
	if got.Ref.String() != "keepalived-operator/keepalivedgroup-workers" || got.MadeFor != MadeForKeepalived || got.Source != "KeepalivedGroup keepalived-operator/keepalivedgroup-workers" {
		t.Errorf("group %s made for %q from %q", got.Ref, got.MadeFor, got.Source)
	}
	want := v1alpha1.VIPGroupSpec{Interface: "ens3", NodeSelector: map[string]string{"node-role.kubernetes.io/loadbalancer": ""}, ExcludedVRIDs: []int32{1, 2}}
	if diff := cmp.Diff(want, got.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	var probs []string
	for _, p := range c.Problems {
		probs = append(probs, p.Error())
		if p.Name == "bad" != p.Refused {
			t.Errorf("%v: refused %v", p, p.Refused)
		}
	}
	wantProbs := []string{
		"KeepalivedGroup keepalived-operator/bad: spec.blacklistRouterIDs[0]: 300: want a VRID from 1 to 255",
		"KeepalivedGroup keepalived-operator/keepalivedgroup-workers: spec.image registry.redhat.io/openshift4/ose-keepalived-ipfailover: the operator's keepalived image; not applicable to vipstack, whose agents serve the group",
	}
	if diff := cmp.Diff(wantProbs, probs); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if !c.Empty() || len(c.Pools) != 0 {
		t.Errorf("KeepalivedGroups gave pools %+v", c.Pools)
	}
}

func TestOpenShiftPools(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ext   *ExternalIPConfig
		want  map[string][]string
		probs []string
	}{
		{name: "no externalIP", want: map[string][]string{}},
		{name: "the seed: allowed and auto-assign the same block, host bits set",
			ext:  &ExternalIPConfig{AutoAssignCIDRs: []string{"198.18.6.33/27"}, Policy: &ExternalIPPolicy{AllowedCIDRs: []string{"198.18.6.33/27"}}},
			want: map[string][]string{OpenShiftAutoAssignPool: {"198.18.6.33-198.18.6.62"}}},
		{name: "allowed less rejected and auto-assign",
			ext: &ExternalIPConfig{AutoAssignCIDRs: []string{"198.18.6.64/28"}, Policy: &ExternalIPPolicy{
				AllowedCIDRs: []string{"198.18.6.0/24", "fd00::/126"}, RejectedCIDRs: []string{"198.18.6.0/27", "fd00::1/128"}}},
			want: map[string][]string{
				OpenShiftAutoAssignPool: {"198.18.6.65-198.18.6.78"},
				OpenShiftAllowedPool:    {"198.18.6.32-198.18.6.63", "198.18.6.80-198.18.6.255", "fd00::-fd00::", "fd00::2-fd00::3"},
			}},
		{name: "policy without auto-assign", ext: &ExternalIPConfig{Policy: &ExternalIPPolicy{AllowedCIDRs: []string{"198.18.7.0/30"}}},
			want: map[string][]string{OpenShiftAllowedPool: {"198.18.7.0-198.18.7.3"}}},
		{name: "a bad block is reported", ext: &ExternalIPConfig{AutoAssignCIDRs: []string{"nonsense", "198.18.8.0/30"}},
			want:  map[string][]string{OpenShiftAutoAssignPool: {"198.18.8.1-198.18.8.2"}},
			probs: []string{`Network cluster: spec.externalIP.autoAssignCIDRs[0] "nonsense": not a CIDR block (want e.g. 198.18.6.32/27)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &OpenShiftNetwork{}
			n.Name = OpenShiftNetworkName
			n.Spec.ExternalIP = tc.ext
			var c Config
			c.AddKeepalived(nil, n)
			got := map[string][]string{}
			for _, p := range c.Pools {
				got[p.Name] = ranges(p.Ranges)
				if p.AutoAssign {
					t.Errorf("pool %s auto-assigns: it would give addresses to Services of other groups", p.Name)
				}
				if !p.Group.IsZero() {
					t.Errorf("pool %s is served by group %s by itself", p.Name, p.Group)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pools (-want +got):\n%s", diff)
			}
			var probs []string
			for _, p := range c.Problems {
				probs = append(probs, p.Error())
			}
			if diff := cmp.Diff(tc.probs, probs); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			// OpenShift's pools serve Services that name a group only.
			if !c.Empty() || len(c.Candidates()) != 0 {
				t.Errorf("Empty %v, candidates %v: OpenShift's pools must not serve Services that name no group", c.Empty(), c.Candidates())
			}
			if _, ok := tc.want[OpenShiftAutoAssignPool]; c.OpenShiftAutoAssign() != ok {
				t.Errorf("OpenShiftAutoAssign %v", c.OpenShiftAutoAssign())
			}
		})
	}
}

func TestKeepalivedServiceNotes(t *testing.T) {
	for _, tc := range []struct {
		name string
		ann  map[string]string
		want []string // substrings, one per note
	}{
		{name: "only the group", ann: map[string]string{"keepalived-operator.redhat-cop.io/keepalivedgroup": "ns/g"}},
		{name: "spreadvips", ann: map[string]string{SpreadVIPsAnnotation: "true"},
			want: []string{`annotation keepalived-operator.redhat-cop.io/spreadvips "true": not implemented by vipstack`}},
		{name: "both", ann: map[string]string{SpreadVIPsAnnotation: "false", VerbatimConfigAnnotation: `{"track_src_ip": ""}`},
			want: []string{"spreadvips \"false\"", `verbatimconfig "{\"track_src_ip\": \"\"}": not implemented by vipstack (keepalived keys for the Service's instance)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := KeepalivedServiceNotes(tc.ann)
			if len(got) != len(tc.want) {
				t.Fatalf("notes %q, want %d", got, len(tc.want))
			}
			for i := range got {
				if !strings.Contains(got[i], tc.want[i]) {
					t.Errorf("note %d %q, want one containing %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

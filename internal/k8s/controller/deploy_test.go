package controller_test

import (
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s/k8stest"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// TestDeploy checks deploy/: the CRDs and RBAC are applied for real by the
// harness (and the controller runs with exactly that RBAC in
// TestController); the Deployment, the DaemonSet and the examples pass a
// server-side dry run (schema, CEL rules, defaults, admission).
func TestDeploy(t *testing.T) {
	h := newHarness(t)
	for _, ns := range []string{"keepalived-operator", "demo"} {
		h.namespace(ns)
	}
	for _, f := range []string{"controller.yaml", "agent.yaml", "examples.yaml"} {
		t.Run(f, func(t *testing.T) {
			objs := k8stest.Objects(t, f)
			if len(objs) == 0 {
				t.Fatalf("%s holds no objects", f)
			}
			if err := k8stest.Apply(t.Context(), h.c, objs, true); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCRDValidation sends objects to the real API server (dry run) and
// checks that the CRDs' schemas and CEL rules accept the good ones and
// reject the bad ones with a message that says what is wanted.
func TestCRDValidation(t *testing.T) {
	h := newHarness(t)
	h.namespace("v")
	v2 := func(ms int32) *v1alpha1.VIPGroup {
		g := group("v", "g", nil)
		g.Spec.VRRPVersion, g.Spec.AdvertIntervalMilliseconds = 2, ms
		return g
	}
	tests := []struct {
		name    string
		obj     client.Object
		wantErr string // "" means accepted
	}{
		{name: "group defaults", obj: group("v", "g", map[string]string{"a": "b"}, 3, 4)},
		{name: "group v2 whole seconds", obj: v2(2000)},
		{name: "group v2 fraction", obj: v2(1500), wantErr: "with vrrpVersion 2 the advertisement interval is whole seconds"},
		{name: "group v3 not centiseconds", obj: func() client.Object { g := group("v", "g", nil); g.Spec.AdvertIntervalMilliseconds = 15; return g }(),
			wantErr: "with vrrpVersion 3 the advertisement interval is 10 to 40950 milliseconds in steps of 10"},
		{name: "group version 4", obj: func() client.Object { g := group("v", "g", nil); g.Spec.VRRPVersion = 4; return g }(),
			wantErr: `spec.vrrpVersion: Unsupported value: 4: supported values: "2", "3"`},
		{name: "group bad interface", obj: func() client.Object { g := group("v", "g", nil); g.Spec.Interface = "eth0/1"; return g }(),
			wantErr: "interface must be a Linux interface name"},
		{name: "group link", obj: func() client.Object { g := group("v", "g", nil); g.Spec.Link = "rack-a.lan_2"; return g }()},
		{name: "group bad link", obj: func() client.Object { g := group("v", "g", nil); g.Spec.Link = "-lan a"; return g }(),
			wantErr: `spec.link in body should match`},
		{name: "group v2 password", obj: func() client.Object {
			g := v2(1000)
			g.Spec.AuthPassSecretRef = &v1alpha1.SecretKeyRef{Name: "vrrp", Key: "password"}
			return g
		}()},
		{name: "group v3 password", obj: func() client.Object {
			g := group("v", "g", nil)
			g.Spec.AuthPassSecretRef = &v1alpha1.SecretKeyRef{Name: "vrrp", Key: "password"}
			return g
		}(), wantErr: "VRRP authentication exists in version 2 only: authPassSecretRef needs vrrpVersion 2"},
		{name: "group password without key", obj: func() client.Object {
			g := v2(1000)
			g.Spec.AuthPassSecretRef = &v1alpha1.SecretKeyRef{Name: "vrrp"}
			return g
		}(), wantErr: "spec.authPassSecretRef.key"},
		{name: "group non-revertive", obj: func() client.Object { g := group("v", "g", nil); g.Spec.NonRevertive = true; return g }()},
		{name: "group preempt delay", obj: func() client.Object { g := group("v", "g", nil); g.Spec.PreemptDelayMilliseconds = 30000; return g }()},
		{name: "group non-revertive with delay", obj: func() client.Object {
			g := group("v", "g", nil)
			g.Spec.NonRevertive, g.Spec.PreemptDelayMilliseconds = true, 30000
			return g
		}(), wantErr: "preemptDelayMilliseconds has no effect with nonRevertive"},
		{name: "group preempt delay too long", obj: func() client.Object { g := group("v", "g", nil); g.Spec.PreemptDelayMilliseconds = 1000001; return g }(),
			wantErr: "spec.preemptDelayMilliseconds: Invalid value: 1000001"},
		{name: "group VRID 0", obj: group("v", "g", nil, 0), wantErr: "spec.excludedVRIDs[0]: Invalid value: 0: spec.excludedVRIDs[0] in body should be greater than or equal to 1"},
		{name: "pool block and range", obj: pool("p", true, []string{"team"}, "198.18.0.0/24", "fd00::/120", "198.18.1.10 - 198.18.1.20")},
		{name: "pool single address", obj: pool("p", false, nil, "198.18.0.7")},
		{name: "pool host bits", obj: pool("p", true, nil, "198.18.0.1/24"), wantErr: "want a CIDR block without host bits"},
		{name: "pool mixed range", obj: pool("p", true, nil, "198.18.0.1-fd00::1"), wantErr: "a range is FIRST-LAST with two addresses of one family"},
		{name: "pool garbage", obj: pool("p", true, nil, "banana"), wantErr: "want a CIDR block without host bits"},
		{name: "pool empty", obj: pool("p", true, nil), wantErr: "spec.addresses: Required value"},
		{name: "pool bad namespace", obj: pool("p", true, []string{"Team"}, "198.18.0.0/24"), wantErr: `spec.namespaces[0]: Invalid value: "Team"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := h.c.Create(t.Context(), tt.obj, client.DryRunAll)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("accepted, want an error with %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("error %q\ndoes not contain %q", err, tt.wantErr)
			}
		})
	}
}

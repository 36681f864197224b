package controller_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s/controller"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestBGPPeerConditions: the CRD's schema refuses what one field gets
// wrong; the controller's Ready condition (and an Event) says whether the
// agents use a BGPPeer: in the release namespace with a valid spec, and
// how many nodes it selects.
func TestBGPPeerConditions(t *testing.T) {
	h := newHarness(t)
	h.namespace("infra")
	h.node("n1", "198.18.0.11", map[string]string{"rack": "a"})
	h.node("n2", "198.18.0.12", map[string]string{"rack": "b"})
	h.startController(controller.Options{})
	peer := func(ns, name string, f func(*v1alpha1.BGPPeerSpec)) *v1alpha1.BGPPeer {
		p := &v1alpha1.BGPPeer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.BGPPeerSpec{PeerAddress: "198.18.0.1", PeerASN: 64512, MyASN: 64513}}
		if f != nil {
			f(&p.Spec)
		}
		return p
	}
	ready := func(ns, name string, status metav1.ConditionStatus, reason, msg string) {
		t.Helper()
		testutil.Eventually(t, 30*time.Second, func() error {
			var p v1alpha1.BGPPeer
			if err := h.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
				return err
			}
			c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady)
			if c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, msg) {
				return fmt.Errorf("BGPPeer %s/%s Ready = %+v, want %s %s holding %q", ns, name, c, status, reason, msg)
			}
			return nil
		})
	}

	h.create(peer(systemNS, "rack-a", func(s *v1alpha1.BGPPeerSpec) { s.NodeSelector = map[string]string{"rack": "a"} }))
	ready(systemNS, "rack-a", metav1.ConditionTrue, controller.ReasonValid, "peer 198.18.0.1 AS 64512, nodes AS 64513; 1 nodes selected")

	// Valid, with a note: BFD and graceful restart work against each other.
	h.create(peer(systemNS, "bfd-gr", func(s *v1alpha1.BGPPeerSpec) { s.BFD, s.GracefulRestartSeconds = &v1alpha1.PeerBFD{}, 120 }))
	ready(systemNS, "bfd-gr", metav1.ConditionTrue, controller.ReasonValid, "keeps the routes of a session BFD took down as stale for 120 s")

	h.create(peer("infra", "elsewhere", nil))
	ready("infra", "elsewhere", metav1.ConditionFalse, controller.ReasonOtherNamespace, "the agents read the BGPPeers of namespace "+systemNS+" only")

	// The schema cannot see this one: single-hop BFD to a router 3 hops away.
	h.create(peer(systemNS, "far", func(s *v1alpha1.BGPPeerSpec) { s.EBGPMultihop, s.BFD = 3, &v1alpha1.PeerBFD{} }))
	ready(systemNS, "far", metav1.ConditionFalse, controller.ReasonInvalid, "spec.bfd.multihop: false for a peer 3 hops away")
	if note := h.waitEvent(systemNS, "BGPPeer", "far", corev1.EventTypeWarning, controller.ReasonInvalid); !strings.Contains(note, "spec.bfd.multihop") {
		t.Errorf("the Event says %q, want the field spec.bfd.multihop", note)
	}

	for _, tc := range []struct {
		name string
		f    func(*v1alpha1.BGPPeerSpec)
		want string
	}{
		{"hold", func(s *v1alpha1.BGPPeerSpec) { s.HoldTimeSeconds = 2 }, "holdTimeSeconds is 0 (the default, 90) or 3 to 65535"},
		{"keepalive", func(s *v1alpha1.BGPPeerSpec) { s.HoldTimeSeconds, s.KeepaliveSeconds = 9, 9 }, "keepaliveSeconds must be below the hold time"},
		{"addr", func(s *v1alpha1.BGPPeerSpec) { s.PeerAddress = "router" }, "peerAddress must be an IPv4 or IPv6 address"},
		{"ibgp-multihop", func(s *v1alpha1.BGPPeerSpec) { s.MyASN, s.EBGPMultihop = 64512, 2 }, "ebgpMultihop is for eBGP peers"},
	} {
		err := h.c.Create(t.Context(), peer(systemNS, "bad-"+tc.name, tc.f))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("create BGPPeer bad-%s: %v, want the schema's %q", tc.name, err, tc.want)
		}
	}
	err := h.c.Create(t.Context(), &v1alpha1.VIPGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "bad-community"},
		Spec: v1alpha1.VIPGroupSpec{BGP: &v1alpha1.GroupBGP{Communities: []string{"64512"}}}})
	if err == nil || !strings.Contains(err.Error(), "spec.bgp.communities[0]") {
		t.Errorf("create VIPGroup with community 64512: %v, want the schema to refuse spec.bgp.communities[0]", err)
	}
}

package controller_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s/controller"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// TestVRIDsPerLink: groups on different links reuse VRIDs, groups that
// may share a link (one interface, one named link, or the interface of
// the nodes' InternalIPs) never do, and each group's status says its link
// and its budget counting only the groups on that link; a BGP group takes
// no VRIDs.
func TestVRIDsPerLink(t *testing.T) {
	h := newHarness(t)
	h.namespace("infra")
	h.node("n1", "198.18.0.11", nil)
	h.node("n2", "198.18.0.12", nil)
	h.startController(controller.Options{})

	vrids := func(g *v1alpha1.VIPGroup) []int {
		var out []int
		for _, in := range g.Status.Instances {
			out = append(out, int(in.VRID))
		}
		slices.Sort(out)
		return out
	}
	type want struct {
		vrids     []int
		link      string
		available int32
		phrase    string
	}
	check := func(name string, w want) {
		t.Helper()
		h.groupStatus("infra", name, func(g *v1alpha1.VIPGroup) error {
			got := want{vrids: vrids(g), link: g.Status.Link, available: g.Status.VRIDsAvailable}
			var msg string
			for _, c := range g.Status.Conditions {
				if c.Type == v1alpha1.ConditionReady {
					msg = c.Message
				}
			}
			if !slices.Equal(got.vrids, w.vrids) || got.link != w.link || got.available != w.available || !strings.Contains(msg, w.phrase) {
				return fmt.Errorf("group %s: VRIDs %v, link %q, vridsAvailable %d, Ready %q; want %v, %q, %d, %q",
					name, got.vrids, got.link, got.available, msg, w.vrids, w.link, w.available, w.phrase)
			}
			return nil
		})
	}
	on := func(name, iface, link string) *v1alpha1.VIPGroup {
		g := group("infra", name, nil)
		g.Spec.Interface, g.Spec.Link = iface, link
		return g
	}

	// a on eth1 takes 1 and 2; b on eth2, another link, takes them too.
	h.create(on("a", "eth1", ""))
	check("a", want{vrids: []int{1, 2}, link: "eth1", available: 253, phrase: "VRIDs 1,2 (unique on link eth1)"})
	h.create(on("b", "eth2", ""))
	check("b", want{vrids: []int{1, 2}, link: "eth2", available: 253, phrase: "(unique on link eth2)"})
	// c on eth1 as a: 3 and 4; a's budget counts c's.
	h.create(on("c", "eth1", ""))
	check("c", want{vrids: []int{3, 4}, link: "eth1", available: 251})
	check("a", want{vrids: []int{1, 2}, link: "eth1", available: 251})
	check("b", want{vrids: []int{1, 2}, link: "eth2", available: 253})
	// d on the InternalIP's interface may be on any link: 5 and 6,
	// counted in every group's budget.
	h.create(on("d", "", ""))
	check("d", want{vrids: []int{5, 6}, link: "", available: 249, phrase: "(unique in the cluster"})
	check("a", want{vrids: []int{1, 2}, link: "eth1", available: 249})
	check("b", want{vrids: []int{1, 2}, link: "eth2", available: 251})
	// e on ens4 names link eth2: b's link, though another interface name.
	h.create(on("e", "ens4", "eth2"))
	check("e", want{vrids: []int{3, 4}, link: "eth2", available: 249})
	// f on ens5, link lan-f: shares only with d.
	h.create(on("f", "ens5", "lan-f"))
	check("f", want{vrids: []int{1, 2}, link: "lan-f", available: 251})

	// b moves to eth1: it may no longer keep 1 and 2 (a's).
	var b v1alpha1.VIPGroup
	if err := h.c.Get(t.Context(), client.ObjectKey{Namespace: "infra", Name: "b"}, &b); err != nil {
		t.Fatal(err)
	}
	b.Spec.Interface = "eth1"
	if err := h.c.Update(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	check("b", want{vrids: []int{7, 8}, link: "eth1", available: 247})

	// g on eth1 announces over BGP: its nodes are laid out with no VRIDs,
	// and every budget on eth1 stays as it was.
	bg := on("g", "eth1", "")
	bg.Spec.BGP = &v1alpha1.GroupBGP{}
	h.create(bg)
	check("g", want{vrids: []int{0, 0}, link: "eth1", available: 247, phrase: "2 nodes announce over BGP; no VRIDs taken"})
	check("a", want{vrids: []int{1, 2}, link: "eth1", available: 247})
	// A group on eth1 created after it takes the next free VRIDs, 9 and 10.
	h.create(on("h", "eth1", ""))
	check("h", want{vrids: []int{9, 10}, link: "eth1", available: 245})
}

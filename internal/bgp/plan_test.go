package bgp

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// addrs lets cmp compare netip values.
var addrs = cmpopts.EquateComparable(netip.Addr{}, netip.Prefix{})

// TestPlan runs a sequence of verdicts through Plan, applying each step's
// ops to the announced set as the speaker does, and checks the ops and the
// route states after every step.
func TestPlan(t *testing.T) {
	v4 := netip.MustParseAddr("198.19.0.10")
	v6 := netip.MustParseAddr("fd00:2::10")
	p4, p6 := netip.PrefixFrom(v4, 32), netip.PrefixFrom(v6, 128)
	med := uint32(20)
	routes := []Route{{VIP: v4}, {VIP: v6}}
	steps := []struct {
		name     string
		routes   []Route // nil keeps the previous step's
		verdicts []Verdict
		wantOps  []Op
		wantSt   []RouteStatus
	}{
		{
			name:     "no verdicts yet",
			verdicts: nil,
			wantSt: []RouteStatus{
				{Prefix: p4, Reason: "no eligibility verdict for this VIP yet"},
				{Prefix: p6, Reason: "no eligibility verdict for this VIP yet"},
			},
		},
		{
			name:     "both eligible",
			verdicts: []Verdict{{VIP: v4, Eligible: true, Reason: "backends 2/2 up"}, {VIP: v6, Eligible: true, Reason: "backends 2/2 up"}},
			wantOps: []Op{
				{Route: Route{VIP: v4}, Reason: "eligible: backends 2/2 up"},
				{Route: Route{VIP: v6}, Reason: "eligible: backends 2/2 up"},
			},
			wantSt: []RouteStatus{
				{Prefix: p4, Announced: true, Reason: "eligible: backends 2/2 up"},
				{Prefix: p6, Announced: true, Reason: "eligible: backends 2/2 up"},
			},
		},
		{
			name:     "same verdicts: nothing to do",
			verdicts: []Verdict{{VIP: v4, Eligible: true, Reason: "backends 2/2 up"}, {VIP: v6, Eligible: true, Reason: "backends 2/2 up"}},
			wantSt: []RouteStatus{
				{Prefix: p4, Announced: true, Reason: "eligible: backends 2/2 up"},
				{Prefix: p6, Announced: true, Reason: "eligible: backends 2/2 up"},
			},
		},
		{
			name:     "check fails on the IPv4 VIP",
			verdicts: []Verdict{{VIP: v4, Eligible: false, Reason: "track script chk_api failed"}, {VIP: v6, Eligible: true, Reason: "backends 2/2 up"}},
			wantOps:  []Op{{Withdraw: true, Route: Route{VIP: v4}, Reason: "not eligible: track script chk_api failed"}},
			wantSt: []RouteStatus{
				{Prefix: p4, Reason: "not eligible: track script chk_api failed"},
				{Prefix: p6, Announced: true, Reason: "eligible: backends 2/2 up"},
			},
		},
		{
			name:     "verdict for the IPv6 VIP disappears",
			verdicts: []Verdict{{VIP: v4, Eligible: false, Reason: "track script chk_api failed"}},
			wantOps:  []Op{{Withdraw: true, Route: Route{VIP: v6}, Reason: "no eligibility verdict"}},
			wantSt: []RouteStatus{
				{Prefix: p4, Reason: "not eligible: track script chk_api failed"},
				{Prefix: p6, Reason: "no eligibility verdict for this VIP yet"},
			},
		},
		{
			name:     "IPv4 back with a MED",
			routes:   []Route{{VIP: v4, Attributes: Attributes{MED: &med}}, {VIP: v6}},
			verdicts: []Verdict{{VIP: v4, Eligible: true, Reason: "ok"}},
			wantOps:  []Op{{Route: Route{VIP: v4, Attributes: Attributes{MED: &med}}, Reason: "eligible: ok"}},
			wantSt: []RouteStatus{
				{Prefix: p4, Announced: true, Reason: "eligible: ok"},
				{Prefix: p6, Reason: "no eligibility verdict for this VIP yet"},
			},
		},
		{
			name:     "attributes change: announced again",
			routes:   []Route{{VIP: v4, Attributes: Attributes{Communities: []string{"64512:1"}}}, {VIP: v6}},
			verdicts: []Verdict{{VIP: v4, Eligible: true, Reason: "ok"}},
			wantOps:  []Op{{Route: Route{VIP: v4, Attributes: Attributes{Communities: []string{"64512:1"}}}, Reason: "attributes changed"}},
			wantSt: []RouteStatus{
				{Prefix: p4, Announced: true, Reason: "eligible: ok"},
				{Prefix: p6, Reason: "no eligibility verdict for this VIP yet"},
			},
		},
		{
			name:     "route removed from the config",
			routes:   []Route{{VIP: v6}},
			verdicts: []Verdict{{VIP: v4, Eligible: true, Reason: "ok"}},
			wantOps:  []Op{{Withdraw: true, Route: Route{VIP: v4}, Reason: "no longer configured"}},
			wantSt:   []RouteStatus{{Prefix: p6, Reason: "no eligibility verdict for this VIP yet"}},
		},
	}
	announced := map[netip.Prefix]Attributes{}
	for _, s := range steps {
		if s.routes != nil {
			routes = s.routes
		}
		ops, st := Plan(routes, nil, s.verdicts, announced)
		if d := cmp.Diff(s.wantOps, ops, addrs); d != "" {
			t.Fatalf("%s: ops (-want +got):\n%s", s.name, d)
		}
		if d := cmp.Diff(s.wantSt, st, addrs); d != "" {
			t.Fatalf("%s: status (-want +got):\n%s", s.name, d)
		}
		for _, op := range ops {
			if op.Withdraw {
				delete(announced, op.Route.Prefix())
			} else {
				announced[op.Route.Prefix()] = op.Route.Attributes
			}
		}
	}
}

// TestPlanDemotion: a demoted verdict keeps the route announced with the
// demotion's attributes, and a move between eligible and demoted announces
// it again; without a demotion (nil) it withdraws, and a verdict that is
// not eligible withdraws either way.
func TestPlanDemotion(t *testing.T) {
	v4 := netip.MustParseAddr("198.19.0.10")
	p4 := netip.PrefixFrom(v4, 32)
	u32 := func(v uint32) *uint32 { return &v }
	prepend := &Demotion{Prepend: 3}
	medLP := &Demotion{LocalPref: u32(50), MED: u32(100)}
	routes := []Route{{VIP: v4, Attributes: Attributes{MED: u32(10), Communities: []string{"64512:1"}}}}
	base := routes[0].Attributes
	ok := Verdict{VIP: v4, Eligible: true, Reason: "chk_ocp_lb ok"}
	weak := Verdict{VIP: v4, Eligible: true, Demoted: true, Reason: "chk_ocp_lb failing"}
	fatal := Verdict{VIP: v4, Reason: "chk_api failing"}
	steps := []struct {
		name    string
		demote  *Demotion
		verdict Verdict
		wantOps []Op
		wantSt  RouteStatus
	}{
		{name: "eligible", demote: prepend, verdict: ok,
			wantOps: []Op{{Route: routes[0], Reason: "eligible: chk_ocp_lb ok"}},
			wantSt:  RouteStatus{Prefix: p4, Announced: true, Reason: "eligible: chk_ocp_lb ok"}},
		{name: "demoted: prepended", demote: prepend, verdict: weak,
			wantOps: []Op{{Route: Route{VIP: v4, Attributes: Attributes{MED: u32(10), Communities: []string{"64512:1"}, Prepend: 3}}, Reason: "demoted: chk_ocp_lb failing"}},
			wantSt:  RouteStatus{Prefix: p4, Announced: true, Demoted: true, Reason: "demoted: chk_ocp_lb failing"}},
		{name: "still demoted: nothing to do", demote: prepend, verdict: weak,
			wantSt: RouteStatus{Prefix: p4, Announced: true, Demoted: true, Reason: "demoted: chk_ocp_lb failing"}},
		{name: "eligible again: configured attributes", demote: prepend, verdict: ok,
			wantOps: []Op{{Route: routes[0], Reason: "eligible: chk_ocp_lb ok"}},
			wantSt:  RouteStatus{Prefix: p4, Announced: true, Reason: "eligible: chk_ocp_lb ok"}},
		{name: "demoted by LOCAL_PREF and MED", demote: medLP, verdict: weak,
			wantOps: []Op{{Route: Route{VIP: v4, Attributes: Attributes{MED: u32(100), LocalPref: u32(50), Communities: []string{"64512:1"}}}, Reason: "demoted: chk_ocp_lb failing"}},
			wantSt:  RouteStatus{Prefix: p4, Announced: true, Demoted: true, Reason: "demoted: chk_ocp_lb failing"}},
		{name: "fatal check: withdrawn", demote: medLP, verdict: fatal,
			wantOps: []Op{{Withdraw: true, Route: Route{VIP: v4}, Reason: "not eligible: chk_api failing"}},
			wantSt:  RouteStatus{Prefix: p4, Reason: "not eligible: chk_api failing"}},
		{name: "back eligible", demote: nil, verdict: ok,
			wantOps: []Op{{Route: routes[0], Reason: "eligible: chk_ocp_lb ok"}},
			wantSt:  RouteStatus{Prefix: p4, Announced: true, Reason: "eligible: chk_ocp_lb ok"}},
		{name: "demotion off: withdrawn", demote: nil, verdict: weak,
			wantOps: []Op{{Withdraw: true, Route: Route{VIP: v4}, Reason: "not eligible: chk_ocp_lb failing (demotion off: a failing check withdraws)"}},
			wantSt:  RouteStatus{Prefix: p4, Reason: "not eligible: chk_ocp_lb failing (demotion off: a failing check withdraws)"}},
		{name: "demotion on again: announced demoted", demote: prepend, verdict: weak,
			wantOps: []Op{{Route: Route{VIP: v4, Attributes: Attributes{MED: u32(10), Communities: []string{"64512:1"}, Prepend: 3}}, Reason: "demoted: chk_ocp_lb failing"}},
			wantSt:  RouteStatus{Prefix: p4, Announced: true, Demoted: true, Reason: "demoted: chk_ocp_lb failing"}},
	}
	announced := map[netip.Prefix]Attributes{}
	for _, s := range steps {
		ops, st := Plan(routes, s.demote, []Verdict{s.verdict}, announced)
		if d := cmp.Diff(s.wantOps, ops, addrs); d != "" {
			t.Fatalf("%s: ops (-want +got):\n%s", s.name, d)
		}
		if d := cmp.Diff([]RouteStatus{s.wantSt}, st, addrs); d != "" {
			t.Fatalf("%s: status (-want +got):\n%s", s.name, d)
		}
		for _, op := range ops {
			if op.Withdraw {
				delete(announced, op.Route.Prefix())
			} else {
				announced[op.Route.Prefix()] = op.Route.Attributes
			}
		}
	}
	if d := cmp.Diff(base, routes[0].Attributes); d != "" {
		t.Errorf("Plan changed the configured route (-want +got):\n%s", d)
	}
	for v, want := range map[Verdict]string{ok: "eligible", weak: "demoted", fatal: "not eligible"} {
		if got := v.State(); got != want {
			t.Errorf("%+v.State() = %q, want %q", v, got, want)
		}
	}
}

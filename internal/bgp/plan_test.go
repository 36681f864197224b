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
		ops, st := Plan(routes, s.verdicts, announced)
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

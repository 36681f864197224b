package tcprules

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

func acl(t *testing.T, fetch, match string, values ...string) lbconfig.ACLTest {
	t.Helper()
	a := lbconfig.ACLTest{Fetch: fetch, Keyword: fetch, Match: match, Values: values}
	if err := lbconfig.CompileACL(&a); err != nil {
		t.Fatal(err)
	}
	return a
}

func expr(t *testing.T, s string) *lbconfig.AddrExpr {
	t.Helper()
	e, err := lbconfig.ParseAddrExpr(s)
	if err != nil {
		t.Fatal(err)
	}
	return &e
}

func named(name string) *lbconfig.Cond {
	return &lbconfig.Cond{Or: [][]lbconfig.CondTerm{{{Name: name}}}}
}

// TestEval: rules in order, set-src and set-dst seen by the rules after
// them, the first accept, reject or silent-drop deciding.
func TestEval(t *testing.T) {
	ap := netip.MustParseAddrPort
	acls := map[string][]lbconfig.ACLTest{
		"rejected":  {acl(t, "src", "ip", "10.212.232.0")},
		"low_port":  {acl(t, "src_port", "int", ":1023")},
		"web":       {acl(t, "dst_port", "int", "80", "443")},
		"local_dst": {acl(t, "dst", "ip", "127.0.0.0/8")},
		"two":       {acl(t, "src", "ip", "192.0.2.1"), acl(t, "src", "ip", "192.0.2.2")},
	}
	rules044 := []lbconfig.TCPRule{
		{Action: "set-src", Expr: expr(t, "src,ipmask(21)")},
		{Action: "reject", Cond: named("rejected"), At: "h.cfg:3"},
	}
	tests := []struct {
		name     string
		rules    []lbconfig.TCPRule
		src, dst string
		want     Result
	}{
		{name: "no rules", src: "10.0.0.1:4000", dst: "10.0.0.9:80",
			want: Result{Src: ap("10.0.0.1:4000"), Dst: ap("10.0.0.9:80")}},
		{name: "set-src then reject on the masked address", rules: rules044, src: "10.212.239.7:5555", dst: "10.0.0.9:5001",
			want: Result{Verdict: Reject, Src: ap("10.212.232.0:5555"), Dst: ap("10.0.0.9:5001"), At: "h.cfg:3"}},
		{name: "set-src outside the network", rules: rules044, src: "10.212.240.7:5555", dst: "10.0.0.9:5001",
			want: Result{Src: ap("10.212.240.0:5555"), Dst: ap("10.0.0.9:5001")}},
		{name: "accept ends the list", src: "192.0.2.2:2000", dst: "10.0.0.9:80",
			rules: []lbconfig.TCPRule{{Action: "accept", Cond: named("two"), At: "a"}, {Action: "reject", At: "r"}},
			want:  Result{Src: ap("192.0.2.2:2000"), Dst: ap("10.0.0.9:80"), At: "a"}},
		{name: "unless", src: "192.0.2.3:2000", dst: "10.0.0.9:80",
			rules: []lbconfig.TCPRule{{Action: "reject", Cond: &lbconfig.Cond{Unless: true, Or: named("two").Or}, At: "r"}},
			want:  Result{Verdict: Reject, Src: ap("192.0.2.3:2000"), Dst: ap("10.0.0.9:80"), At: "r"}},
		{name: "ports, or", src: "192.0.2.3:2000", dst: "10.0.0.9:443",
			rules: []lbconfig.TCPRule{{Action: "silent-drop", Cond: &lbconfig.Cond{Or: [][]lbconfig.CondTerm{{{Name: "low_port"}}, {{Name: "web"}}}}, At: "d"}},
			want:  Result{Verdict: SilentDrop, Src: ap("192.0.2.3:2000"), Dst: ap("10.0.0.9:443"), At: "d"}},
		{name: "ports, and with a negation", src: "192.0.2.3:2000", dst: "10.0.0.9:443",
			rules: []lbconfig.TCPRule{{Action: "reject", Cond: &lbconfig.Cond{Or: [][]lbconfig.CondTerm{{{Name: "web"}, {Name: "low_port", Neg: true}}}}, At: "r"}},
			want:  Result{Verdict: Reject, Src: ap("192.0.2.3:2000"), Dst: ap("10.0.0.9:443"), At: "r"}},
		{name: "set-dst seen by a later dst acl", src: "192.0.2.3:2000", dst: "10.0.0.9:443",
			rules: []lbconfig.TCPRule{{Action: "set-dst", Expr: expr(t, "ipv4(127.0.0.2)")}, {Action: "reject", Cond: named("local_dst"), At: "r"}},
			want:  Result{Verdict: Reject, Src: ap("192.0.2.3:2000"), Dst: ap("127.0.0.2:443"), At: "r"}},
		{name: "set-src of an IPv6 client, mask6", src: "[2001:db8::1:2]:2000", dst: "[2001:db8::9]:443",
			rules: []lbconfig.TCPRule{{Action: "set-src", Expr: expr(t, "src,ipmask(24,64)")}},
			want:  Result{Src: ap("[2001:db8::]:2000"), Dst: ap("[2001:db8::9]:443")}},
		{name: "an anonymous acl, predefined TRUE", src: "192.0.2.3:2000", dst: "10.0.0.9:443",
			rules: []lbconfig.TCPRule{
				{Action: "reject", Cond: &lbconfig.Cond{Or: [][]lbconfig.CondTerm{{{Anon: &lbconfig.ACLTest{Fetch: "always_false", Match: "bool"}}}}}, At: "1"},
				{Action: "reject", Cond: named("TRUE"), At: "2"}},
			want: Result{Verdict: Reject, Src: ap("192.0.2.3:2000"), Dst: ap("10.0.0.9:443"), At: "2"}},
		{name: "an HTTP fetch never matches", src: "192.0.2.3:2000", dst: "10.0.0.9:443",
			rules: []lbconfig.TCPRule{{Action: "reject", Cond: &lbconfig.Cond{Or: [][]lbconfig.CondTerm{{{Anon: &lbconfig.ACLTest{Fetch: "path", Match: "str", Values: []string{"/"}}}}}}, At: "1"}},
			want:  Result{Src: ap("192.0.2.3:2000"), Dst: ap("10.0.0.9:443")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Eval(tt.rules, acls, ap(tt.src), ap(tt.dst))
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); diff != "" {
				t.Errorf("Eval (-want +got):\n%s", diff)
			}
		})
	}
}

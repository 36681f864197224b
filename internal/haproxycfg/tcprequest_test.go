package haproxycfg

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestTCPRequestAccepts: tcp-request connection and content rules in
// frontends and listens, read in order with their conditions, and the
// warnings haproxy 2.6 gives (checked against haproxy -c's output):
// http-request and http-response lines of a mode tcp section ignored,
// a connection rule after a content rule, an acl a connection rule can
// never match.
func TestTCPRequestAccepts(t *testing.T) {
	const listen = "listen l\n  bind 127.0.0.1:47020\n" // 11-12
	ipmask := func(m4 int) *lbconfig.AddrExpr { return &lbconfig.AddrExpr{Fetch: "src", Mask4: m4, Mask6: 128} }
	src := func(v string) *lbconfig.ACLTest {
		a := lbconfig.ACLTest{Fetch: "src", Keyword: "src", Match: "ip", Values: []string{v}}
		if err := lbconfig.CompileACL(&a); err != nil {
			t.Fatal(err)
		}
		return &a
	}
	anon := func(a *lbconfig.ACLTest) *lbconfig.Cond {
		return &lbconfig.Cond{Or: [][]lbconfig.CondTerm{{{Anon: a}}}}
	}
	tests := []struct {
		name         string
		conf         string
		want         *lbconfig.TCPRequest // of the last frontend
		wantWarnings []string
	}{
		{
			name: "a Patroni listen's set-src and reject (corpus 044's form)",
			conf: base + listen + "  acl network_rejected src 10.212.232.0\n  tcp-request connection set-src src,ipmask(21)\n" +
				"  tcp-request connection reject if network_rejected\n  server s 127.0.0.1:47021\n",
			want: &lbconfig.TCPRequest{
				ACLs: map[string][]lbconfig.ACLTest{"network_rejected": {*src("10.212.232.0")}},
				Connection: []lbconfig.TCPRule{
					{Action: "set-src", Expr: ipmask(21), At: "h.cfg:14"},
					{Action: "reject", Cond: &lbconfig.Cond{Or: [][]lbconfig.CondTerm{{{Name: "network_rejected"}}}}, At: "h.cfg:15"},
				},
			},
		},
		{
			name: "accept, silent-drop, set-dst, content rules in a frontend",
			conf: edit(t, "  default_backend masters\n", "  tcp-request connection accept if { src 10.0.0.1 }\n"+
				"  tcp-request connection silent-drop unless { src_port 1024: }\n"+
				"  tcp-request connection set-dst ipv4(127.0.0.2)\n"+
				"  tcp-request inspect-delay 5s\n"+
				"  tcp-request content accept if { dst_port 47011 }\n"+
				"  tcp-request content reject\n"+
				"  default_backend masters\n"),
			want: &lbconfig.TCPRequest{
				Connection: []lbconfig.TCPRule{
					{Action: "accept", Cond: anon(src("10.0.0.1")), At: "h.cfg:8"},
					{Action: "silent-drop", Cond: &lbconfig.Cond{Unless: true, Or: anon(&lbconfig.ACLTest{Fetch: "src_port", Keyword: "src_port", Match: "int", Values: []string{"1024:"}, Ints: []lbconfig.IntRange{{Lo: 1024, Hi: 1<<63 - 1}}}).Or}, At: "h.cfg:9"},
					{Action: "set-dst", Expr: &lbconfig.AddrExpr{Fetch: "ipv4", Addr: netip.MustParseAddr("127.0.0.2"), Mask4: 32, Mask6: 128}, At: "h.cfg:10"},
				},
				Content: []lbconfig.TCPRule{
					{Action: "accept", Cond: anon(&lbconfig.ACLTest{Fetch: "dst_port", Keyword: "dst_port", Match: "int", Values: []string{"47011"}, Ints: []lbconfig.IntRange{{Lo: 47011, Hi: 47011}}}), At: "h.cfg:12"},
					{Action: "reject", At: "h.cfg:13"},
				},
			},
		},
		{
			name: "inspect-delay in a backend",
			conf: base + "  tcp-request inspect-delay 5s\n",
		},
		{
			name: "http-request and http-response in a mode tcp listen",
			conf: base + listen + "  http-request set-header X 1\n  http-request use-service prometheus-exporter\n" +
				"  http-response del-header Y\n  server s 127.0.0.1:47021\n",
			wantWarnings: []string{
				"h.cfg:13: 'http-request' rules ignored for proxy 'l' as they require HTTP mode.",
				"h.cfg:15: 'http-response' rules ignored for proxy 'l' as they require HTTP mode.",
			},
		},
		{
			name: "use-service in a mode tcp frontend and http-response in a tcp backend",
			conf: base + "frontend t\n  bind 127.0.0.1:47019\n  http-request use-service prometheus-exporter\n  default_backend t\n" +
				"backend t\n  http-response del-header X\n  server s 127.0.0.1:1\n",
			wantWarnings: []string{
				"h.cfg:13: 'http-request' rules ignored for frontend 't' as they require HTTP mode.",
				"h.cfg:16: 'http-response' rules ignored for backend 't' as they require HTTP mode.",
			},
		},
		{
			name: "a connection rule after a content rule; acls it never matches",
			conf: base + listen + "  acl p path /x\n  tcp-request content reject if { src 10.0.0.2 }\n" +
				"  tcp-request connection reject if p\n  tcp-request connection reject if { path /y }\n  server s 127.0.0.1:47021\n",
			want: &lbconfig.TCPRequest{
				ACLs: map[string][]lbconfig.ACLTest{"p": {{Fetch: "path", Keyword: "path", Match: "str", Values: []string{"/x"}}}},
				Connection: []lbconfig.TCPRule{
					{Action: "reject", Cond: &lbconfig.Cond{Or: [][]lbconfig.CondTerm{{{Name: "p"}}}}, At: "h.cfg:15"},
					{Action: "reject", Cond: anon(&lbconfig.ACLTest{Fetch: "path", Keyword: "path", Match: "str", Values: []string{"/y"}}), At: "h.cfg:16"},
				},
				Content: []lbconfig.TCPRule{{Action: "reject", Cond: anon(src("10.0.0.2")), At: "h.cfg:14"}},
			},
			wantWarnings: []string{
				"h.cfg:15: a 'tcp-request' rule placed after a 'tcp-request content' rule will still be processed before.",
				"h.cfg:16: a 'tcp-request' rule placed after a 'tcp-request content' rule will still be processed before.",
				"h.cfg:15: acl 'p' will never match in 'tcp-request connection' because it only involves keywords that are incompatible with 'frontend tcp-request connection rule'",
				"h.cfg:16: anonymous acl will never match in 'tcp-request connection' because it uses keyword 'path' which is incompatible with 'frontend tcp-request connection rule'",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("h.cfg", []byte(tt.conf))
			if err != nil {
				t.Fatalf("Parse: %v\n%s", err, tt.conf)
			}
			got := cfg.Frontends[len(cfg.Frontends)-1].TCPRequest
			opts := cmp.Options{cmpOpts, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })}
			if diff := cmp.Diff(tt.want, got, opts); diff != "" {
				t.Errorf("TCPRequest (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantWarnings, cfg.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			ok, out := haproxyCheck(t, []byte(tt.conf))
			if !ok {
				t.Fatalf("haproxy -c rejects it:\n%s", out)
			}
			for _, w := range tt.wantWarnings {
				_, msg, _ := strings.Cut(w, ": ")
				if !strings.Contains(out, msg) {
					t.Errorf("haproxy -c does not warn %q:\n%s", msg, out)
				}
			}
		})
	}
}

// TestTCPRequestErrors: what vipstack does not carry out is refused,
// naming the line, the action or fetch and what is accepted; where
// haproxy refuses too, in its words.
func TestTCPRequestErrors(t *testing.T) {
	const listen = "listen l\n  bind 127.0.0.1:47020\n" // 11-12
	const srv = "  server s 127.0.0.1:47021\n"
	for _, tt := range []struct {
		name, conf, want, haproxy string
	}{
		{"an unknown action", base + listen + "  tcp-request connection bogus\n" + srv,
			"h.cfg:13: 'tcp-request connection bogus' is not supported by vipstack in proxy 'l' (accepted: accept, reject, set-src EXPR, set-dst EXPR, silent-drop)", haproxyRejects},
		{"an action haproxy has and vipstack does not", base + listen + "  tcp-request connection set-mark 1\n" + srv,
			"h.cfg:13: 'tcp-request connection set-mark' is not supported by vipstack in proxy 'l' (accepted: accept, reject, set-src EXPR, set-dst EXPR, silent-drop)", haproxyAccepts},
		{"a content action of connection rules only", base + listen + "  tcp-request content set-src src\n" + srv,
			"h.cfg:13: 'tcp-request content set-src' is not supported by vipstack in proxy 'l' (accepted: accept, reject)", haproxyAccepts},
		{"no action", base + listen + "  tcp-request connection\n" + srv,
			"h.cfg:13: 'tcp-request connection' expects an action (accepted by vipstack: accept, reject, set-src EXPR, set-dst EXPR, silent-drop)", haproxyRejects},
		{"set-src of a header", base + listen + "  tcp-request connection set-src hdr(x-forwarded-for)\n" + srv,
			`h.cfg:13: tcp-request connection set-src: sample expression "hdr(x-forwarded-for)" is not supported by vipstack (accepted: src, dst, ipv4(ADDR) or ipv6(ADDR), each maybe followed by ,ipmask(MASK4[,MASK6]))`, haproxyAccepts},
		{"words after reject", base + listen + "  tcp-request connection reject now\n" + srv,
			"h.cfg:13: 'tcp-request connection reject' expects either 'if' or 'unless' followed by a condition but found 'now'", haproxyRejects},
		{"a content rule on data", base + listen + "  tcp-request inspect-delay 5s\n  tcp-request content reject if { path /x }\n" + srv,
			`h.cfg:14: tcp-request content reject: acl criterion "path" needs the connection's data, which vipstack does not inspect in mode tcp (accepted: always_false, always_true, dst, dst_port, src, src_port)`, haproxyAccepts},
		{"an undefined acl", base + listen + "  tcp-request connection reject if nosuch\n" + srv,
			`acl "nosuch" is not defined in frontend l`, haproxyRejects},
		{"in mode http", base + "listen l\n  bind 127.0.0.1:47020\n  mode http\n  tcp-request connection reject\n" + srv,
			"h.cfg:14: tcp-request rules in proxy 'l' (mode http) are not supported by vipstack (accepted: tcp-request connection and content rules in mode tcp sections)", haproxyAccepts},
		{"a connection rule in a backend", base + "  tcp-request connection reject\n",
			"h.cfg:11: tcp-request connection is not allowed because backend masters is not a frontend", haproxyRejects},
		{"a content rule in a backend", base + "  tcp-request content reject\n",
			"h.cfg:11: tcp-request content rules in backend masters are not supported by vipstack (accepted: tcp-request content rules in a frontend or listen; tcp-request inspect-delay TIME in a backend)", haproxyAccepts},
		{"in defaults", edit(t, "  mode tcp\n", "  mode tcp\n  tcp-request connection reject\n"),
			"h.cfg:3: tcp-request rules in defaults are not supported by vipstack (haproxy: not allowed in anonymous 'defaults' sections;", haproxyRejects},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("h.cfg", []byte(tt.conf))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error = %v, want one containing %q", err, tt.want)
			}
			ok, out := haproxyCheck(t, []byte(tt.conf))
			if ok != (tt.haproxy == haproxyAccepts) {
				t.Errorf("haproxy -c: valid=%v, want %s; output:\n%s", ok, tt.haproxy, out)
			}
		})
	}
}

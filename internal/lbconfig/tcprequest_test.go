package lbconfig

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseAddrExpr: set-src's and set-dst's expressions, written back
// as read, and their values.
func TestParseAddrExpr(t *testing.T) {
	src, dst := netip.MustParseAddr("10.212.239.7"), netip.MustParseAddr("2001:db8::1:9")
	for _, tt := range []struct {
		in, str, eval, err string
	}{
		{in: "src", str: "src", eval: "10.212.239.7"},
		{in: "src,ipmask(21)", str: "src,ipmask(21)", eval: "10.212.232.0"},
		{in: "src,ipmask(255.255.248.0)", str: "src,ipmask(21)", eval: "10.212.232.0"},
		{in: "dst,ipmask(24,64)", str: "dst,ipmask(24,64)", eval: "2001:db8::"},
		{in: "dst,ipmask(24,ffff:ffff:ffff::)", str: "dst,ipmask(24,48)", eval: "2001:db8::"},
		{in: "ipv4(192.0.2.1)", str: "ipv4(192.0.2.1)", eval: "192.0.2.1"},
		{in: "ipv6(2001:db8::7)", str: "ipv6(2001:db8::7)", eval: "2001:db8::7"},
		{in: "hdr(x-forwarded-for)", err: `sample expression "hdr(x-forwarded-for)" is not supported by vipstack (accepted: src, dst, ipv4(ADDR)`},
		{in: "src,ipmask(33)", err: `"src,ipmask(33)": ipmask: "33" is not a mask (accepted: 0..32`},
		{in: "src,ipmask(255.0.255.0)", err: `ipmask: "255.0.255.0" is not a mask`},
		{in: "src,lower", err: `converter "lower" of "src,lower" is not supported by vipstack`},
		{in: "ipv4(2001:db8::1)", err: `"ipv4(2001:db8::1)": ipv4 takes an IPv4 address`},
	} {
		t.Run(tt.in, func(t *testing.T) {
			e, err := ParseAddrExpr(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := e.String(); got != tt.str {
				t.Errorf("String() = %q, want %q", got, tt.str)
			}
			if got := e.Eval(src, dst).String(); got != tt.eval {
				t.Errorf("Eval = %s, want %s", got, tt.eval)
			}
		})
	}
}

// TestIntMatch: an int acl's values and ranges.
func TestIntMatch(t *testing.T) {
	a := ACLTest{Fetch: "src_port", Match: "int", Values: []string{"80", "1024:2048", ":10", "60000:"}}
	if err := CompileACL(&a); err != nil {
		t.Fatal(err)
	}
	want := []IntRange{{80, 80}, {1024, 2048}, {-1 << 63, 10}, {60000, 1<<63 - 1}}
	if diff := cmp.Diff(want, a.Ints); diff != "" {
		t.Errorf("Ints (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"x", ":", "5:4", "1:x"} {
		b := ACLTest{Fetch: "src_port", Match: "int", Values: []string{bad}}
		if err := CompileACL(&b); err == nil || !strings.Contains(err.Error(), "is not an integer or a range") {
			t.Errorf("%q: error %v", bad, err)
		}
	}
}

// TestYAMLRefusesTCPRequest: the YAML form cannot carry the rules, so
// writing them there is an error, not a loss.
func TestYAMLRefusesTCPRequest(t *testing.T) {
	c := &Config{Frontends: []Frontend{{Name: "f", Backend: "b", TCPRequest: &TCPRequest{Content: []TCPRule{{Action: "reject"}}}}},
		Backends: []Backend{{Name: "b"}}}
	if _, err := FormatYAML(c); !errors.Is(err, ErrYAMLTCPRequest) {
		t.Errorf("FormatYAML: %v, want %v", err, ErrYAMLTCPRequest)
	}
}

// TestValidateTCPRequest: rules the model cannot carry out are refused,
// naming the frontend, the rule and what is accepted.
func TestValidateTCPRequest(t *testing.T) {
	cfg := func(tr *TCPRequest) *Config {
		return &Config{
			Timeouts:  Timeouts{Connect: 1e9, Client: 1e9, Server: 1e9},
			Frontends: []Frontend{{Name: "f", Backend: "b", Binds: []Bind{{Addr: netip.MustParseAddrPort("127.0.0.1:1")}}, TCPRequest: tr}},
			Backends:  []Backend{{Name: "b", Servers: []Server{{Name: "s", Addr: netip.MustParseAddrPort("127.0.0.1:2")}}}},
		}
	}
	src := &AddrExpr{Fetch: "src", Mask4: 32, Mask6: 128}
	for _, tt := range []struct {
		name string
		tr   *TCPRequest
		want string // "" accepts
	}{
		{"accepted", &TCPRequest{ACLs: map[string][]ACLTest{"a": {{Fetch: "src", Match: "ip", Values: []string{"10.0.0.0/8"}}}},
			Connection: []TCPRule{{Action: "set-src", Expr: src}, {Action: "reject", Cond: &Cond{Or: [][]CondTerm{{{Name: "a"}}}}}},
			Content:    []TCPRule{{Action: "accept"}}}, ""},
		{"unknown action", &TCPRequest{Connection: []TCPRule{{Action: "track-sc0", At: "h.cfg:9"}}},
			"h.cfg:9: frontend f: tcp-request connection track-sc0 is not supported by vipstack (accepted: accept, reject, set-src EXPR, set-dst EXPR, silent-drop)"},
		{"silent-drop in content", &TCPRequest{Content: []TCPRule{{Action: "silent-drop"}}},
			"tcp-request content silent-drop is not supported by vipstack (accepted: accept, reject)"},
		{"set-src without an expression", &TCPRequest{Connection: []TCPRule{{Action: "set-src"}}},
			"tcp-request connection set-src: an expression goes with set-src and set-dst only"},
		{"an expression of another fetch", &TCPRequest{Connection: []TCPRule{{Action: "set-dst", Expr: &AddrExpr{Fetch: "hdr"}}}},
			`tcp-request connection set-dst: fetch "hdr" is not supported by vipstack`},
		{"an undefined acl", &TCPRequest{Connection: []TCPRule{{Action: "reject", Cond: &Cond{Or: [][]CondTerm{{{Name: "nosuch"}}}}}}},
			`acl "nosuch" is not defined in frontend f`},
		{"a bad acl value", &TCPRequest{ACLs: map[string][]ACLTest{"p": {{Fetch: "src_port", Match: "int", Values: []string{"x"}}}}},
			`acl p: "x" is not an integer or a range`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(cfg(tt.tr))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Validate: %v, want an error containing %q", err, tt.want)
			}
		})
	}
	c := cfg(&TCPRequest{Content: []TCPRule{{Action: "reject"}}})
	c.Frontends[0].HTTP = &HTTPFrontend{}
	c.Backends[0].HTTP = &HTTPBackend{}
	if err := Validate(c); err == nil || !strings.Contains(err.Error(), "tcp-request rules in mode http frontend f are not supported by vipstack") {
		t.Errorf("mode http: %v", err)
	}
}

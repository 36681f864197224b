// Package tcprules evaluates haproxy 2.6's tcp-request connection and
// content rules (lbconfig.TCPRequest) on a connection's addresses: the
// conditions over the layer 4 fetches (src, dst, src_port, dst_port),
// set-src and set-dst, and the verdict. It is pure: the load balancer
// applies the verdict to the socket.
package tcprules

import (
	"net/netip"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// Verdict is what becomes of a connection.
type Verdict uint8

const (
	Accept     Verdict = iota // go on (no rule matched, or accept)
	Reject                    // close it with a reset
	SilentDrop                // close it without telling the client
)

// Result is a list's verdict and the connection's addresses after its
// set-src and set-dst rules.
type Result struct {
	Verdict  Verdict
	Src, Dst netip.AddrPort
	// At is the "file:line" of the rule that decided; "" when none did.
	At string
}

// Eval runs rules in order over a connection from src to dst, with the
// section's named acls: set-src and set-dst change the addresses the
// later rules see, and the first accept, reject or silent-drop whose
// condition holds ends the list. set-src and set-dst keep the port
// (haproxy 2.6 keeps it where the address family allows).
func Eval(rules []lbconfig.TCPRule, acls map[string][]lbconfig.ACLTest, src, dst netip.AddrPort) Result {
	r := Result{Src: src, Dst: dst}
	for _, rule := range rules {
		if !Cond(rule.Cond, acls, r.Src, r.Dst) {
			continue
		}
		switch rule.Action {
		case "set-src":
			r.Src = netip.AddrPortFrom(rule.Expr.Eval(r.Src.Addr(), r.Dst.Addr()), r.Src.Port())
		case "set-dst":
			r.Dst = netip.AddrPortFrom(rule.Expr.Eval(r.Src.Addr(), r.Dst.Addr()), r.Dst.Port())
		case "accept":
			r.At = rule.At
			return r
		case "reject":
			r.Verdict, r.At = Reject, rule.At
			return r
		case "silent-drop":
			r.Verdict, r.At = SilentDrop, rule.At
			return r
		}
	}
	return r
}

// Cond evaluates an if/unless condition over the connection's
// addresses; nil is true.
func Cond(c *lbconfig.Cond, acls map[string][]lbconfig.ACLTest, src, dst netip.AddrPort) bool {
	return c.Holds(func(t lbconfig.CondTerm) bool { return term(t, acls, src, dst) })
}

func term(t lbconfig.CondTerm, acls map[string][]lbconfig.ACLTest, src, dst netip.AddrPort) bool {
	if t.Anon != nil {
		m, _ := Match(t.Anon, src, dst)
		return m
	}
	tests, ok := acls[t.Name]
	if !ok {
		pre, ok := lbconfig.PredefinedACLs[t.Name]
		if !ok {
			return false
		}
		tests = []lbconfig.ACLTest{pre}
	}
	for i := range tests {
		if m, _ := Match(&tests[i], src, dst); m {
			return true
		}
	}
	return false
}

// Match evaluates an acl whose fetch is one of lbconfig.L4Fetches on a
// connection from src to dst; known is false for any other fetch, which
// never matches on layer 4 (haproxy warns of such an acl).
func Match(t *lbconfig.ACLTest, src, dst netip.AddrPort) (matched, known bool) {
	switch t.Fetch {
	case "always_true":
		return true, true
	case "always_false":
		return false, true
	case "src", "dst":
		a := src.Addr()
		if t.Fetch == "dst" {
			a = dst.Addr()
		}
		a = a.Unmap()
		for _, n := range t.Nets {
			if n.Contains(a) {
				return true, true
			}
		}
		return false, true
	case "src_port", "dst_port":
		p := int64(src.Port())
		if t.Fetch == "dst_port" {
			p = int64(dst.Port())
		}
		for _, r := range t.Ints {
			if p >= r.Lo && p <= r.Hi {
				return true, true
			}
		}
		return false, true
	}
	return false, false
}

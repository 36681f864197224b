package lbconfig

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// TCPRequest is a mode tcp frontend's `tcp-request connection` and
// `tcp-request content` rules, with the section's acls they name.
// haproxy 2.6 evaluates the connection rules in order at accept, before
// the connection becomes a session (a rejected one is closed with a
// reset and not logged), then the content rules once the session
// exists; the first accept or reject whose condition holds ends each
// list, and set-src and set-dst change what later rules, the balancing
// and the log see.
type TCPRequest struct {
	ACLs       map[string][]ACLTest // named acls; lines of one name are ORed
	Connection []TCPRule
	Content    []TCPRule
}

// ErrYAMLTCPRequest: the YAML form has no tcp-request rules.
var ErrYAMLTCPRequest = errors.New("tcp-request rules cannot be written in the YAML form (accepted: haproxy.cfg)")

// TCPRule is one tcp-request rule.
type TCPRule struct {
	// Action is one of TCPConnectionActions (connection rules) or
	// TCPContentActions (content rules).
	Action string
	// Expr is set-src's or set-dst's expression.
	Expr *AddrExpr
	Cond *Cond
	// At is the rule's "file:line", for messages.
	At string
}

// The tcp-request actions vipstack carries out.
const (
	TCPConnectionActions = "accept, reject, set-src EXPR, set-dst EXPR, silent-drop"
	TCPContentActions    = "accept, reject"
)

// TCPActionAllowed reports whether action is one vipstack carries out in
// a list of rules of kind ("connection" or "content").
func TCPActionAllowed(kind, action string) bool {
	switch action {
	case "accept", "reject":
		return true
	case "set-src", "set-dst", "silent-drop":
		return kind == "connection"
	}
	return false
}

// AddrExpr is set-src's or set-dst's sample expression: an address
// fetch (src, dst, or a literal ipv4(ADDR) / ipv6(ADDR)) and maybe the
// ipmask converter.
type AddrExpr struct {
	Fetch string     // src, dst, ipv4 or ipv6
	Addr  netip.Addr // ipv4's or ipv6's address
	// Mask4 and Mask6 are ipmask(MASK4[,MASK6])'s prefix lengths
	// (32 and 128 without the converter or MASK6).
	Mask4, Mask6 int
}

// AddrExprs says what an AddrExpr may be, for messages.
const AddrExprs = "src, dst, ipv4(ADDR) or ipv6(ADDR), each maybe followed by ,ipmask(MASK4[,MASK6])"

// ParseAddrExpr reads an AddrExpr such as "src,ipmask(21)".
func ParseAddrExpr(s string) (AddrExpr, error) {
	e := AddrExpr{Mask4: 32, Mask6: 128}
	fetch, conv, hasConv := strings.Cut(s, ",")
	switch {
	case fetch == "src" || fetch == "dst":
		e.Fetch = fetch
	case strings.HasPrefix(fetch, "ipv4(") || strings.HasPrefix(fetch, "ipv6("):
		a, err := netip.ParseAddr(strings.TrimSuffix(fetch[5:], ")"))
		if err != nil || !strings.HasSuffix(fetch, ")") || a.Is4() != (fetch[3] == '4') || a.Zone() != "" {
			return e, fmt.Errorf("%q: %s takes an IPv%c address (accepted: %s)", s, fetch[:4], fetch[3], AddrExprs)
		}
		e.Fetch, e.Addr = fetch[:4], a
	default:
		return e, fmt.Errorf("sample expression %q is not supported by vipstack (accepted: %s)", s, AddrExprs)
	}
	if !hasConv {
		return e, nil
	}
	args, ok := strings.CutPrefix(conv, "ipmask(")
	if !ok || !strings.HasSuffix(args, ")") || strings.Contains(args, "),") {
		return e, fmt.Errorf("converter %q of %q is not supported by vipstack (accepted: %s)", conv, s, AddrExprs)
	}
	m4, m6, two := strings.Cut(args[:len(args)-1], ",")
	var err error
	if e.Mask4, err = maskBits(m4, 32); err != nil {
		return e, fmt.Errorf("%q: ipmask: %v", s, err)
	}
	if two {
		if e.Mask6, err = maskBits(m6, 128); err != nil {
			return e, fmt.Errorf("%q: ipmask: %v", s, err)
		}
	}
	return e, nil
}

// maskBits reads a mask as haproxy's ipmask takes it: a prefix length
// up to max, or a contiguous mask in address form.
func maskBits(s string, max int) (int, error) {
	if n, err := strconv.Atoi(s); err == nil && n >= 0 && n <= max {
		return n, nil
	}
	a, err := netip.ParseAddr(s)
	if err == nil && a.BitLen() == max {
		b := a.AsSlice()
		n := 0
		for n < max && b[n/8]&(0x80>>(n%8)) != 0 {
			n++
		}
		if netip.PrefixFrom(a, n).Masked().Addr() == a {
			return n, nil
		}
	}
	return 0, fmt.Errorf("%q is not a mask (accepted: 0..%d, or a contiguous mask such as %s)", s, max, map[int]string{32: "255.255.248.0", 128: "ffff:ffff::"}[max])
}

// String writes e as haproxy.cfg does.
func (e AddrExpr) String() string {
	s := e.Fetch
	if e.Fetch == "ipv4" || e.Fetch == "ipv6" {
		s += "(" + e.Addr.String() + ")"
	}
	switch {
	case e.Mask6 != 128:
		s += fmt.Sprintf(",ipmask(%d,%d)", e.Mask4, e.Mask6)
	case e.Mask4 != 32:
		s += fmt.Sprintf(",ipmask(%d)", e.Mask4)
	}
	return s
}

// Eval is e's value for a connection from src to dst. ipmask keeps the
// masked address (Mask4 bits of an IPv4 address, Mask6 of an IPv6 one).
func (e AddrExpr) Eval(src, dst netip.Addr) netip.Addr {
	a := e.Addr
	switch e.Fetch {
	case "src":
		a = src
	case "dst":
		a = dst
	}
	bits := e.Mask6
	if a.Is4() {
		bits = e.Mask4
	}
	if p, err := a.Prefix(bits); err == nil {
		return p.Addr()
	}
	return a
}

// L4Fetches are the acl fetches known on a connection before any data:
// what a tcp-request rule's condition may use.
var L4Fetches = []string{"always_false", "always_true", "dst", "dst_port", "src", "src_port"}

// tcpRequest checks a frontend's tcp-request rules.
func (v *validator) tcpRequest(f *Frontend) {
	r := f.TCPRequest
	if r == nil {
		return
	}
	key := FrontendKey(f.Name)
	if f.HTTP != nil {
		v.fail(v.pos(key), key, "tcp-request", "tcp-request rules in mode http frontend %s are not supported by vipstack (accepted: tcp-request connection and content rules in mode tcp)", f.Name)
	}
	h := &HTTPProxy{ACLs: r.ACLs}
	for name, tests := range r.ACLs {
		for i := range tests {
			if err := CompileACL(&tests[i]); err != nil {
				v.fail(v.pos(ItemKey(key, "acl "+name), key), key, "acl", "acl %s: %v", name, err)
			}
		}
	}
	for kind, rules := range map[string][]TCPRule{"connection": r.Connection, "content": r.Content} {
		kw := "tcp-request " + kind
		accepted := TCPConnectionActions
		if kind == "content" {
			accepted = TCPContentActions
		}
		for _, rule := range rules {
			at := rule.At
			if at == "" {
				at = v.pos(key)
			}
			if !TCPActionAllowed(kind, rule.Action) {
				v.fail(at, key, kw, "%s %s is not supported by vipstack (accepted: %s)", kw, rule.Action, accepted)
			}
			if (rule.Expr != nil) != (rule.Action == "set-src" || rule.Action == "set-dst") {
				v.fail(at, key, kw, "%s %s: an expression goes with set-src and set-dst only (accepted: %s)", kw, rule.Action, accepted)
			}
			if e := rule.Expr; e != nil && !slices.Contains([]string{"src", "dst", "ipv4", "ipv6"}, e.Fetch) {
				v.fail(at, key, kw, "%s %s: fetch %q is not supported by vipstack (accepted: %s)", kw, rule.Action, e.Fetch, AddrExprs)
			}
			v.cond(key, kw+" "+rule.Action, h, rule.Cond)
		}
	}
}

package haproxycfg

import (
	"strings"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// checkOpts records a backend's check options (`option httpchk`,
// `option tcp-check`, `option ssl-hello-chk`, `option mysql-check`,
// `option pgsql-check`, `option redis-check`) and
// its check rules in file order, so that endChecks can settle them as
// haproxy 2.6 does (measured with haproxy -c and on the wire):
//
//   - the last check option sets the check type; earlier ones are
//     dropped without a word (the kubeadm guide's `option httpchk` +
//     `http-check expect` followed by `option ssl-hello-chk` sends a TLS
//     ClientHello);
//   - an option drops the rules of another type written before it,
//     silently;
//   - rules of a type the backend does not use, written after the last
//     option (or with no option at all), draw haproxy's warning "uses
//     tcp-check rules without 'option tcp-check', so the rules are
//     ignored."
type checkOpts struct {
	kinds     []string // option kinds in order: httpchk, tcp-check, ssl-hello-chk, mysql-check, pgsql-check, redis-check
	lines     []int
	tcpLines  []int    // line of each rule in Backend.TCPCheck
	httpLines []int    // lines of http-check rules
	send      httpSend // http-check send and connect (httpcheck.go)
	// external-check command and path (extcheck.go)
	extCommand, extPath string
}

func (c *checkOpts) option(kind string, line int) {
	c.kinds = append(c.kinds, kind)
	c.lines = append(c.lines, line)
}

func (c *checkOpts) tcpRule(line int)  { c.tcpLines = append(c.tcpLines, line) }
func (c *checkOpts) httpRule(line int) { c.httpLines = append(c.httpLines, line) }

// last is the check type in force and the line that set it; "" without
// a check option.
func (c *checkOpts) last() (string, int) {
	if len(c.kinds) == 0 {
		return "", 0
	}
	return c.kinds[len(c.kinds)-1], c.lines[len(c.lines)-1]
}

// lastOther is the line of the last option of a kind other than kind, 0
// if none.
func (c *checkOpts) lastOther(kind string) int {
	for i := len(c.kinds) - 1; i >= 0; i-- {
		if c.kinds[i] != kind {
			return c.lines[i]
		}
	}
	return 0
}

// after reports whether a rule line comes after line.
func after(lines []int, line int) (int, bool) {
	for _, n := range lines {
		if n > line {
			return n, true
		}
	}
	return 0, false
}

// endChecks settles the backend's check type, with haproxy's warnings
// for rules of a type the backend does not use.
func (p *parser) endChecks() {
	be, c := p.be, &p.checks
	kind, at := c.last()
	if kind != "httpchk" {
		if n, ok := after(c.httpLines, at); ok {
			p.warnf(line{num: n}, "backend '%s' uses http-check rules without 'option httpchk', so the rules are ignored.", be.Name)
		}
		be.Check = lbconfig.HTTPCheck{}
	}
	if kind != "tcp-check" {
		if n, ok := after(c.tcpLines, at); ok {
			p.warnf(line{num: n}, "backend '%s' uses tcp-check rules without 'option tcp-check', so the rules are ignored.", be.Name)
		}
		be.TCPCheck = nil
	} else if other := c.lastOther("tcp-check"); other != 0 {
		// Rules written before another check option went with it.
		keep := be.TCPCheck[:0]
		for i, r := range be.TCPCheck {
			if c.tcpLines[i] > other {
				keep = append(keep, r)
			}
		}
		be.TCPCheck = keep
		if len(keep) == 0 {
			be.TCPCheck = nil
		}
	}
	if other := c.lastOther("httpchk"); kind == "httpchk" && other != 0 {
		if n := len(c.httpLines); n > 0 && c.httpLines[n-1] < other {
			be.Check.ExpectStatus, be.Check.ExpectBody = "", nil
		}
	}
	if kind == "httpchk" {
		p.endHTTPSend(c.lastOther("httpchk"))
	}
	be.SSLHelloCheck = kind == "ssl-hello-chk"
	be.ExternalCheck = nil
	if kind == "external-check" {
		be.ExternalCheck = &lbconfig.ExternalCheck{Command: c.extCommand, Path: c.extPath}
		p.extChecks = append(p.extChecks, nameLine{be.Name, at})
	}
	if kind != "mysql-check" {
		be.MySQLCheck = nil
	}
	be.RedisCheck = kind == "redis-check"
	if kind != "pgsql-check" {
		be.PgSQLUser = ""
	}
}

// mysqlCheck reads `option mysql-check [user NAME [post-41|pre-41]]`.
func (p *parser) mysqlCheck(l line) {
	args, ok := p.nargs(l, 2, 0, 3, "[user NAME [post-41|pre-41]]")
	if !ok {
		return
	}
	c := &lbconfig.MySQLCheck{}
	switch {
	case len(args) == 0:
	case args[0] != "user" || len(args) < 2:
		p.errorf(l, "option", "option mysql-check: %q (accepted: option mysql-check [user NAME [post-41|pre-41]])", strings.Join(args, " "))
		return
	default:
		c.User = args[1]
		if len(args) == 3 {
			switch args[2] {
			case "post-41":
			case "pre-41":
				c.Pre41 = true
			default:
				p.errorf(l, "option", "option mysql-check: %q is not a protocol version (accepted: post-41, pre-41)", args[2])
				return
			}
		}
	}
	p.be.MySQLCheck = c
	p.checks.option("mysql-check", l.num)
}

// pgsqlCheck reads `option pgsql-check user NAME`, with haproxy 2.6's
// errors (the user is required).
func (p *parser) pgsqlCheck(l line) {
	args := l.words[2:]
	switch {
	case len(args) > 0 && args[0] != "user":
		p.errorf(l, "option", "'option pgsql-check' only supports optional values: 'user'. (accepted: option pgsql-check user NAME)")
	case len(args) < 2:
		p.errorf(l, "option", "'option pgsql-check' expects 'user <username>' as argument. (accepted: option pgsql-check user NAME)")
	case len(args) > 2:
		p.errorf(l, "option", "'option pgsql-check' cannot handle unexpected argument '%s'. (accepted: option pgsql-check user NAME)", args[2])
	default:
		p.be.PgSQLUser = args[1]
		p.checks.option("pgsql-check", l.num)
	}
}

// hashType reads `hash-type map-based|consistent` into dst (a backend's,
// or defaults', which backends start from). haproxy's hash functions
// (sdbm, djb2, wt6, crc32) and avalanche are refused: vipstack hashes
// client addresses with its own function.
func (p *parser) hashType(l line, dst *string) {
	if !p.once(l, "hash-type") {
		return
	}
	args, ok := p.nargs(l, 1, 1, 3, "map-based or consistent")
	if !ok {
		return
	}
	if args[0] != "map-based" && args[0] != "consistent" {
		p.errorf(l, "hash-type", "hash-type %q is not a method (accepted: map-based, consistent)", args[0])
		return
	}
	if len(args) > 1 {
		p.errorf(l, "hash-type", "hash-type %s %s: vipstack hashes with its own function, not haproxy's (accepted: hash-type map-based or consistent, alone)", args[0], strings.Join(args[1:], " "))
		return
	}
	*dst = args[0]
}

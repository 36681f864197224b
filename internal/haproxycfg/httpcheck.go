package haproxycfg

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// httpSend is a backend's `http-check send` and `http-check connect`
// rules, applied by endChecks when `option httpchk` is in force.
type httpSend struct {
	line                 int // the send rule's line, 0 if none
	method, uri, version string
	headers              []lbconfig.HTTPCheckHeader
	body                 string
	hasBody              bool
	connectLine          int // the connect rule's line, 0 if none
	connectPort          int
	sends                int // send rules so far
	lastRule             string
}

// httpchkOption reads the values of `option httpchk [[METHOD] URI
// [VERSION]]`. A version followed by CRLF and header lines is haproxy's
// older way to add headers ("HTTP/1.1\r\nHost:\ www"): haproxy 2.6 warns
// and sends them, and so does vipstack (measured on the wire: the
// headers in order, a name written in lower case, a value taken as
// written, a trailing backslash included).
func (p *parser) httpchkOption(l line) (lbconfig.HTTPCheck, bool) {
	args, ok := p.nargs(l, 2, 0, 3, "[[METHOD] URI [VERSION]]")
	if !ok {
		return lbconfig.HTTPCheck{}, false
	}
	c := lbconfig.HTTPCheck{Method: lbconfig.DefaultCheckMethod, URI: lbconfig.DefaultCheckURI, Version: lbconfig.DefaultCheckVersion}
	switch len(args) {
	case 1:
		c.URI = args[0]
	case 2:
		c.Method, c.URI = args[0], args[1]
	case 3:
		c.Method, c.URI, c.Version = args[0], args[1], args[2]
	}
	if v, rest, found := strings.Cut(c.Version, "\r\n"); found {
		p.warnf(l, "'option httpchk' : hiding headers or body at the end of the version string is deprecated. Please, consider to use 'http-check send' directive instead.")
		c.Version = v
		head, body, _ := strings.Cut(rest, "\r\n\r\n")
		for _, h := range strings.Split(head, "\r\n") {
			if h == "" {
				continue
			}
			name, value, ok := strings.Cut(h, ":")
			if !ok {
				p.errorf(l, "option", "option httpchk: header line %q after the version has no ':' (accepted: NAME: VALUE lines, each after \\r\\n)", h)
				return lbconfig.HTTPCheck{}, false
			}
			c.Headers = append(c.Headers, lbconfig.HTTPCheckHeader{Name: name, Value: strings.TrimLeft(value, " \t")})
		}
		c.Body = body
	}
	return c, true
}

// defaultsHTTPCheck reads `option httpchk` in defaults: every backend and
// forwarding listen after it starts with it, as in haproxy.
func (p *parser) defaultsHTTPCheck(l line, kw string) bool {
	if kw != "option httpchk" {
		return false
	}
	if !p.once(l, kw) {
		return true
	}
	if c, ok := p.httpchkOption(l); ok {
		p.defCheck, p.defCheckLine = c, l.num
	}
	return true
}

// inheritHTTPCheck gives the backend being opened defaults' option
// httpchk, as if written at defaults' line.
func (p *parser) inheritHTTPCheck() {
	if p.defCheckLine != 0 {
		c := p.defCheck
		c.Headers = append([]lbconfig.HTTPCheckHeader(nil), c.Headers...)
		p.be.Check = c
		p.checks.option("httpchk", p.defCheckLine)
	}
}

const httpCheckAccepted = "http-check connect [port PORT], http-check send [meth METHOD] [uri URI] [ver VERSION] [hdr NAME VALUE]... [body STRING], " +
	"http-check expect status CODES, such as 200 or 200-399, http-check expect rstatus REGEX, or http-check expect [!] string TEXT|rstring REGEX"

// httpCheckSend reads `http-check send [meth M] [uri U] [ver V] [hdr N
// V]... [body S]`. haproxy refuses a second send rule with no expect
// rule between them while option httpchk is in force ("missing connect
// rule"), and so does vipstack; where it is not, haproxy ignores the
// rules with a warning (endChecks).
func (p *parser) httpCheckSend(l line, args []string) {
	s := &p.checks.send
	if kind, _ := p.checks.last(); kind == "httpchk" && s.lastRule == "send" {
		p.errorf(l, "http-check", "'http-check send' : unable to add http-check send rule (missing connect rule): "+
			"a second send rule before an expect rule (accepted: one http-check send line, with all its hdr parts, then http-check expect)")
		return
	}
	s.sends++
	s.lastRule = "send"
	if s.line == 0 {
		s.line = l.num
	}
	for i := 0; i < len(args); i++ {
		need := func(n int) bool {
			if i+n >= len(args) {
				p.errorf(l, "http-check", "http-check send: %s needs %d value(s) (accepted: %s)", args[i], n, httpCheckAccepted)
				return false
			}
			return true
		}
		switch args[i] {
		case "meth", "uri", "ver", "body":
			if !need(1) {
				return
			}
			v := args[i+1]
			switch args[i] {
			case "meth":
				s.method = v
			case "uri":
				s.uri = v
			case "ver":
				s.version = v
			case "body":
				s.body, s.hasBody = v, true
			}
			i++
		case "hdr":
			if !need(2) {
				return
			}
			s.headers = append(s.headers, lbconfig.HTTPCheckHeader{Name: args[i+1], Value: args[i+2]})
			i += 2
		default:
			p.errorf(l, "http-check", "http-check send: %q is not supported by vipstack (accepted: meth, uri, ver, hdr, body; log-format values (uri-lf, body-lf) are not)", args[i])
			return
		}
	}
	p.checks.httpRule(l.num)
}

// httpCheckConnect reads `http-check connect [port PORT] [default]`.
func (p *parser) httpCheckConnect(l line, args []string) {
	s := &p.checks.send
	if s.connectLine != 0 {
		p.errorf(l, "http-check", "http-check connect is already set in %s at line %d (accepted: one connect rule, before the send rule)", p.key, s.connectLine)
		return
	}
	s.connectLine, s.lastRule = l.num, "connect"
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "default":
		case args[i] == "port" && i+1 < len(args):
			n, msg := intValue("port", args[i+1], 1, "1..65535")
			if msg == "" && n > 65535 {
				msg = fmt.Sprintf("port %d is out of range (accepted: 1..65535)", n)
			}
			if msg != "" {
				p.errorf(l, "http-check", "http-check connect %s", msg)
				return
			}
			s.connectPort = n
			i++
		default:
			p.errorf(l, "http-check", "http-check connect: %q is not supported by vipstack (accepted: http-check connect [port PORT] [default])", args[i])
			return
		}
	}
	p.checks.httpRule(l.num)
}

// endHTTPSend applies the send and connect rules to the backend's check
// when option httpchk is in force (endChecks), those written after any
// other check option.
func (p *parser) endHTTPSend(other int) {
	s, c := &p.checks.send, &p.be.Check
	if s.line != 0 && s.line > other {
		if s.method != "" {
			c.Method = s.method
		}
		if s.uri != "" {
			c.URI = s.uri
		}
		if s.version != "" {
			c.Version = s.version
		}
		c.Headers = append(c.Headers, s.headers...)
		if s.hasBody {
			c.Body = s.body
		}
	}
	if s.connectLine != 0 && s.connectLine > other {
		c.Connect, c.ConnectPort = true, s.connectPort
	}
}

// httpCheckBody reads `http-check expect [!] string TEXT` and `http-check
// expect [!] rstring REGEX` (args after http-check): ok is false for
// another rule; body is nil after an error. haproxy 2.6 then passes a
// check whose answer's body holds TEXT (or matches REGEX), whatever its
// status (measured: a 503 with the text passes).
func (p *parser) httpCheckBody(l line, args []string) (body *lbconfig.BodyExpect, ok bool) {
	if len(args) < 2 || args[0] != "expect" {
		return nil, false
	}
	e := &lbconfig.BodyExpect{}
	rest := args[1:]
	if rest[0] == "!" {
		e.Not, rest = true, rest[1:]
	}
	if len(rest) == 0 || rest[0] != "string" && rest[0] != "rstring" {
		if e.Not {
			p.errorf(l, "http-check", "http-check expect ! %s is not supported by vipstack (accepted: http-check expect [!] string TEXT|rstring REGEX)", strings.Join(rest, " "))
			return nil, true
		}
		return nil, false
	}
	kind := rest[0]
	if len(rest) != 2 {
		p.errorf(l, "http-check", "http-check expect %s takes one pattern, got %q (accepted: one word; write a space as '\\ ' or quote the pattern)", kind, strings.Join(rest[1:], " "))
		return nil, true
	}
	e.Text, e.Regex = rest[1], kind == "rstring"
	if e.Regex {
		if _, err := regexp.Compile(e.Text); err != nil {
			p.errorf(l, "http-check", "http-check expect rstring %q: %v (accepted: a regular expression Go's regexp package takes)", e.Text, err)
			return nil, true
		}
	}
	return e, true
}

package haproxycfg

import (
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// Keywords added for issue 27 outside HTTP mode: per-section timeouts
// and maxconn, TCP keep-alives, log options, backup servers, and the
// global settings below. Each section's switch in parse.go hands what it
// does not know to the more* function of its section here.

// proxyOpts are the options a proxy section gets from defaults and may
// set itself.
type proxyOpts struct {
	cliKA, srvKA   bool   // option clitcpka / srvtcpka (tcpka: both)
	allBackups     bool   // option allbackups
	dontLogNormal  bool   // option dontlog-normal
	separateErrors bool   // option log-separate-errors
	abortOnClose   bool   // option abortonclose
	backlog        int    // backlog: the listen queue of binds without one
	logTag         string // log-tag: the syslog tag of the section's lines
}

type moreState struct {
	defaults proxyOpts // set by defaults
	own      proxyOpts // the current section's: defaults' and its own
}

// Extra keywords accepted, for messages.
const (
	moreProxyOptions = "tcp-request inspect-delay, option tcpka, option clitcpka, option srvtcpka, option dontlog-normal, option log-separate-errors, option abortonclose"
	moreGlobalKWs    = "description, node, ulimit-n, spread-checks, hard-stop-after, tune.ssl.default-dh-param, server-state-file, server-state-base"
)

// proxyOption reads an option that defaults and proxy sections share
// into o; fe and be say which sides the section has.
func (p *parser) proxyOption(l line, kw string, o *proxyOpts, fe, be bool) bool {
	var dst []*bool
	switch kw {
	case "option tcpka":
		if fe {
			dst = append(dst, &o.cliKA)
		}
		if be {
			dst = append(dst, &o.srvKA)
		}
	case "option clitcpka":
		if !fe {
			p.warnf(l, "'%s' ignored because %s has no frontend capability.", kw[len("option "):], quoteProxy(p.key))
			return true
		}
		dst = append(dst, &o.cliKA)
	case "option srvtcpka":
		if !be {
			p.warnf(l, "'%s' ignored because %s has no backend capability.", kw[len("option "):], quoteProxy(p.key))
			return true
		}
		dst = append(dst, &o.srvKA)
	case "option allbackups":
		if !be {
			p.warnf(l, "'%s' ignored because %s has no backend capability.", kw[len("option "):], quoteProxy(p.key))
			return true
		}
		dst = append(dst, &o.allBackups)
	case "option abortonclose":
		if !be {
			p.warnf(l, "'%s' ignored because %s has no backend capability.", kw[len("option "):], quoteProxy(p.key))
			return true
		}
		dst = append(dst, &o.abortOnClose)
	case "option dontlog-normal":
		dst = append(dst, &o.dontLogNormal)
	case "option log-separate-errors":
		dst = append(dst, &o.separateErrors)
	default:
		return false
	}
	if _, ok := p.nargs(l, 2, 0, 0, ""); !ok {
		return true
	}
	p.source(lbconfig.ItemKey(p.key, kw), l)
	for _, d := range dst {
		*d = true
	}
	return true
}

// quoteProxy writes a section key as haproxy names a proxy in its
// warnings: "frontend 'fe'".
func quoteProxy(key string) string {
	for i := 0; i < len(key); i++ {
		if key[i] == ' ' {
			return key[:i] + " '" + key[i+1:] + "'"
		}
	}
	return key
}

func (p *parser) moreDefaults(l line, kw string) bool {
	if kw == "tcp-request" {
		p.errorf(l, kw, "tcp-request rules in defaults are not supported by vipstack (haproxy: not allowed in anonymous 'defaults' sections; accepted: %s in frontend and listen sections)", tcpRequestAccepted)
		return true
	}
	switch kw {
	case "hash-type":
		p.hashType(l, &p.defHashType) // checktype.go
		return true
	case "fullconn":
		p.fullConn(l, &p.defFullConn) // stick.go
		return true
	case "backlog":
		p.proxyBacklog(l, &p.more.defaults, true) // bind_more.go
		return true
	case "log-tag":
		p.proxyLogTag(l, &p.more.defaults)
		return true
	}
	return p.proxyOption(l, kw, &p.more.defaults, true, true)
}

func (p *parser) moreFrontend(l line, kw string) bool {
	switch {
	case kw == "timeout" || len(kw) > 8 && kw[:8] == "timeout ":
		p.timeoutInto(l, &p.fe.Timeouts, "frontend")
	case kw == "maxconn":
		p.sectionMaxconn(l, &p.fe.MaxConn)
	case kw == "tcp-request":
		p.tcpRequest(l)
	case kw == "backlog":
		p.proxyBacklog(l, &p.more.own, true)
	case kw == "log-tag":
		p.proxyLogTag(l, &p.more.own)
	default:
		return p.proxyOption(l, kw, &p.more.own, true, false)
	}
	return true
}

func (p *parser) moreBackend(l line, kw string) bool {
	switch {
	case kw == "option mysql-check":
		p.mysqlCheck(l)
	case kw == "option pgsql-check":
		p.pgsqlCheck(l) // checktype.go
	case kw == "option redis-check":
		if _, ok := p.nargs(l, 2, 0, 0, ""); ok {
			p.checks.option("redis-check", l.num) // checktype.go
		}
	case p.externalCheckProxy(l, kw): // extcheck.go
	case kw == "stick-table":
		p.stickTable(l) // stick.go
	case kw == "stick":
		p.stickRule(l)
	case kw == "fullconn":
		p.fullConn(l, &p.be.FullConn)
	case kw == "tcp-request" && p.kind == secBackend:
		p.tcpRequestBackend(l) // tcprequest.go
	case kw == "hash-type":
		p.hashType(l, &p.be.HashType)
	case kw == "backlog" && p.kind == secBackend:
		p.proxyBacklog(l, &p.more.own, false)
	case kw == "log-tag" && p.kind == secBackend:
		p.proxyLogTag(l, &p.more.own)
	case kw == "timeout" || len(kw) > 8 && kw[:8] == "timeout ":
		t := &p.be.Timeouts
		what := "backend"
		if p.kind == secListen {
			t, what = &p.ls.timeouts, "listen"
		}
		p.timeoutInto(l, t, what)
	case kw == "retries":
		if !p.once(l, kw) {
			return true
		}
		if args, ok := p.nargs(l, 1, 1, 1, "a number of retries"); ok {
			if n, ok := p.intArg(l, kw, args[0], 1, "1 or more"); ok {
				p.be.Retries = n
			}
		}
	default:
		return p.proxyOption(l, kw, &p.more.own, p.kind == secListen, true)
	}
	return true
}

// moreListenBackend are keywords that make a listen section forward, as
// a backend's.
const moreListenBackend = "retries|option allbackups|option abortonclose|option srvtcpka|option mysql-check|option pgsql-check|option redis-check|hash-type"

func (p *parser) moreListen(l line, kw string) bool {
	switch {
	case kw == "timeout" || len(kw) > 8 && kw[:8] == "timeout ":
		p.timeoutInto(l, &p.ls.timeouts, "listen")
	case kw == "maxconn":
		p.sectionMaxconn(l, &p.ls.maxconn)
	case kw == "tcp-request":
		p.tcpRequest(l)
	case kw == "backlog":
		p.proxyBacklog(l, &p.more.own, true)
	case kw == "log-tag":
		p.proxyLogTag(l, &p.more.own)
	default:
		for _, k := range splitBar(moreListenBackend) {
			if k == kw {
				if p.ls.forwardLine == 0 {
					p.ls.forwardLine = l.num
					p.be = &lbconfig.Backend{Name: p.ls.name, DontLogNull: p.dontLogNull, RedispatchOnRetry: p.redispatch, Balance: p.defBalance, HashType: p.defHashType, FullConn: p.defFullConn}
				}
				return p.moreBackend(l, kw)
			}
		}
		if p.moreStats(l, kw) {
			return true
		}
		return p.proxyOption(l, kw, &p.more.own, true, true)
	}
	return true
}

func splitBar(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '|' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

// sectionMaxconn reads a frontend's or listen's `maxconn N`.
func (p *parser) sectionMaxconn(l line, dst *int) {
	if !p.once(l, "maxconn") {
		return
	}
	if args, ok := p.nargs(l, 1, 1, 1, "a number of connections"); ok {
		*dst, _ = p.intArg(l, "maxconn", args[0], 0, "0..2147483647")
	}
}

// endFrontendMore gives a frontend the options of o.
func (p *parser) endFrontendMore(f *lbconfig.Frontend, o *proxyOpts) {
	f.KeepAlive, f.LogTag = o.cliKA, o.logTag
	for i := range f.Binds {
		if f.Binds[i].Sock.Backlog == 0 {
			f.Binds[i].Sock.Backlog = o.backlog
		}
	}
	if f.Log != nil {
		f.Log.DontLogNormal, f.Log.SeparateErrors = o.dontLogNormal, o.separateErrors
	}
}

// endBackendMore gives a backend the options of o.
func (p *parser) endBackendMore(b *lbconfig.Backend, o *proxyOpts) {
	b.KeepAlive, b.AllBackups, b.AbortOnClose = o.srvKA, o.allBackups, o.abortOnClose
	b.LogTag = o.logTag
}

// proxyLogTag reads a proxy's (or defaults') `log-tag TAG`: the tag of
// the syslog lines the section sends, over global's.
func (p *parser) proxyLogTag(l line, o *proxyOpts) {
	if !p.once(l, "log-tag") {
		return
	}
	if args, ok := p.nargs(l, 1, 1, 1, "a tag"); ok {
		o.logTag = args[0]
	}
}

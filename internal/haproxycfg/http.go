package haproxycfg

import (
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// HTTP mode: the keywords of frontends, backends and listen sections in
// `mode http` (acl, use_backend, http-request, redirect, option
// forwardfor, cookie, ...), read into lbconfig.HTTPFrontend and
// lbconfig.HTTPBackend.

const (
	httpFrontendKeywords = "acl, capture, compression, errorfile, http-request, http-response, monitor-uri, option forwardfor, option http-buffer-request, option originalto, option http-keep-alive, option http-server-close, option httpclose, option httplog, redirect, stats admin, stats auth, stats enable, stats hide-version, stats realm, stats refresh, stats show-desc, stats show-legends, stats show-node, stats uri, use_backend"
	httpBackendKeywords  = "acl, balance uri, balance hdr(NAME), compression, cookie, errorfile, http-request, http-response, ignore-persist, option forwardfor, option http-buffer-request, option originalto, option http-keep-alive, option http-server-close, option httpclose, redirect, stats admin, stats auth, stats enable, stats hide-version, stats realm, stats refresh, stats show-desc, stats show-legends, stats show-node, stats uri"
)

// withHTTP merges a section's keyword list with its HTTP keywords, sorted.
func withHTTP(base, http string) string {
	var all []string
	for _, list := range []string{base, http} {
		for _, k := range strings.Split(list, ", ") {
			if !slices.Contains(all, k) {
				all = append(all, k)
			}
		}
	}
	slices.Sort(all)
	return strings.Join(all, ", ")
}

// httpDefaults are defaults' HTTP settings, which HTTP proxies inherit.
type httpDefaults struct {
	forwardFor  *lbconfig.ForwardFor
	conn        string
	errorFiles  map[int][]byte
	compression *lbconfig.Compression
	bufferReq   bool
	originalTo  *lbconfig.OriginalTo
	originalAt  int // line of defaults' option originalto
}

// httpSection is the HTTP part of the section being read. What becomes
// of it is known at the section's end, with its mode.
type httpSection struct {
	mode     string // own mode line's value, "" for defaults'
	modeLine int
	first    int    // first line with an HTTP-only keyword
	firstKw  string // its keyword
	// strictFirst is the first line with an HTTP-only keyword other
	// than acl, http-request and http-response, which a mode tcp
	// section may have (tcpModeHTTP); strictFirstKw its keyword.
	strictFirst   int
	strictFirstKw string
	// reqLine and respLine are the first http-request and
	// http-response lines.
	reqLine, respLine int
	// tcp are the section's tcp-request rules; tcpLine the first's
	// line (tcprequest.go).
	tcp     lbconfig.TCPRequest
	tcpLine int
	fe      lbconfig.HTTPFrontend
	be      lbconfig.HTTPBackend
	cookie  string // the server line's cookie value being read
	httplog bool   // own option httplog
	// httplogCLF: the own option httplog is `option httplog clf`.
	httplogCLF bool
	// httplogLine is a listen section's option httplog line.
	httplogLine int
	// useBackend and redirect: the section has a use_backend or a
	// redirect rule, for haproxy's warnings about rules written after
	// them that still run before them (misplaced).
	useBackend, redirect bool
}

// misplaced warns, in haproxy 2.6's words, about a rule of keyword kw
// written after a rule that runs after it: haproxy runs http-request
// rules, then redirect rules, then use_backend rules, whatever their
// order in the file (its warnif_misplaced_http_req and
// warnif_misplaced_redirect; measured with haproxy -c). One warning a
// line, naming the first later kind found.
func (p *parser) misplaced(l line, kw string) {
	switch {
	case kw == "http-request" && p.hs.redirect:
		p.warnf(l, "a '%s' rule placed after a 'redirect' rule will still be processed before.", kw)
	case p.hs.useBackend:
		p.warnf(l, "a '%s' rule placed after a 'use_backend' rule will still be processed before.", kw)
	}
}

// finalRule warns, as haproxy 2.6 does, when the section's last
// http-request rule stops the processing (allow, deny, redirect, return;
// not use-service, measured) whatever the request: the rules after it never
// run.
func (p *parser) finalRule(l line, hp *lbconfig.HTTPProxy) {
	if len(hp.Rules) == 0 {
		return
	}
	last := hp.Rules[len(hp.Rules)-1]
	switch last.Action {
	case "allow", "deny", "redirect", "return":
		if last.Cond == nil {
			p.warnf(l, "previous 'http-request' action is final and has no condition attached, further entries are NOOP.")
		}
	}
}

// httpDefaultsLine reads defaults' HTTP keywords; false if l is not one.
func (p *parser) httpDefaultsLine(l line) bool {
	kw := keyword(l.words)
	switch kw {
	case "option forwardfor":
		if !p.once(l, kw) {
			return true
		}
		if ff, ok := p.forwardFor(l); ok {
			p.hd.forwardFor = ff
			p.forwardforAt = l.num
		}
	case "option http-server-close", "option httpclose", "option http-keep-alive":
		if _, ok := p.nargs(l, 2, 0, 0, ""); ok && p.once(l, kw) {
			p.hd.conn = connMode(kw)
		}
	case "option originalto":
		if !p.once(l, kw) {
			return true
		}
		if ot, ok := p.originalTo(l); ok {
			p.hd.originalTo, p.hd.originalAt = ot, l.num
		}
	case "option http-buffer-request":
		if _, ok := p.nargs(l, 2, 0, 0, ""); ok && p.once(l, kw) {
			p.hd.bufferReq = true
		}
	case "compression":
		if p.hd.compression == nil {
			p.hd.compression = &lbconfig.Compression{}
		}
		p.compression(l, p.hd.compression)
	case "errorfile":
		if code, body, ok := p.readErrorfile(l); ok {
			if p.hd.errorFiles == nil {
				p.hd.errorFiles = map[int][]byte{}
			}
			p.hd.errorFiles[code] = body
		}
	default:
		return false
	}
	return true
}

func connMode(kw string) string {
	switch kw {
	case "option http-server-close":
		return "server-close"
	case "option httpclose":
		return "close"
	}
	return ""
}

// readErrorfile reads `errorfile CODE FILE`.
func (p *parser) readErrorfile(l line) (int, []byte, bool) {
	args, ok := p.nargs(l, 1, 2, 2, "CODE FILE")
	if !ok {
		return 0, nil, false
	}
	if !inList(errorfileCodes, args[0]) {
		p.errorf(l, "errorfile", "errorfile: status code %q is not one haproxy takes (accepted: %s)", args[0], commas(errorfileCodes))
		return 0, nil, false
	}
	body, err := os.ReadFile(args[1])
	if err != nil {
		p.errorf(l, "errorfile", "errorfile: cannot open %q: %v", args[1], unwrapPath(err))
		return 0, nil, false
	}
	code, _ := strconv.Atoi(args[0])
	return code, body, true
}

func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// originalTo reads `option originalto [except NET] [header NAME]`.
func (p *parser) originalTo(l line) (*lbconfig.OriginalTo, bool) {
	ot := &lbconfig.OriginalTo{Header: "X-Original-To"}
	args := l.words[2:]
	for i := 0; i < len(args); i++ {
		if (args[i] != "except" && args[i] != "header") || i+1 == len(args) {
			p.errorf(l, "option originalto", "option originalto: %q is not supported (accepted: except NETWORK, header NAME)", strings.Join(args[i:], " "))
			return nil, false
		}
		i++
		if args[i-1] == "header" {
			ot.Header = args[i]
			continue
		}
		pf, err := netip.ParsePrefix(args[i])
		if err != nil {
			a, err2 := netip.ParseAddr(args[i])
			if err2 != nil {
				p.errorf(l, "option originalto", "option originalto: except %q is not a network (accepted: 127.0.0.0/8, 10.0.0.1)", args[i])
				return nil, false
			}
			pf = netip.PrefixFrom(a, a.BitLen())
		}
		ot.Except = pf.Masked()
	}
	return ot, true
}

// forwardFor reads `option forwardfor [except NET] [header NAME] [if-none]`.
func (p *parser) forwardFor(l line) (*lbconfig.ForwardFor, bool) {
	ff := &lbconfig.ForwardFor{Header: "X-Forwarded-For"}
	args := l.words[2:]
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "if-none":
			ff.IfNone = true
		case "except", "header":
			if i+1 == len(args) {
				p.errorf(l, "option forwardfor", "option forwardfor: %s needs a value (accepted: except NETWORK, header NAME, if-none)", args[i])
				return nil, false
			}
			i++
			if args[i-1] == "header" {
				ff.Header = args[i]
				continue
			}
			pf, err := netip.ParsePrefix(args[i])
			if err != nil {
				a, err2 := netip.ParseAddr(args[i])
				if err2 != nil {
					p.errorf(l, "option forwardfor", "option forwardfor: except %q is not a network (accepted: 127.0.0.0/8, 10.0.0.1)", args[i])
					return nil, false
				}
				pf = netip.PrefixFrom(a, a.BitLen())
			}
			ff.Except = pf.Masked()
		default:
			p.errorf(l, "option forwardfor", "option forwardfor: %q is not supported (accepted: except NETWORK, header NAME, if-none)", args[i])
			return nil, false
		}
	}
	return ff, true
}

// httplogArgs reads `option httplog [clf]`: whether clf is given.
func (p *parser) httplogArgs(l line) (clf bool, ok bool) {
	args, ok := p.nargs(l, 2, 0, 1, "[clf]")
	if !ok {
		return false, false
	}
	if len(args) == 1 && args[0] != "clf" {
		p.errorf(l, "option httplog", "option httplog: %q is not a log format option (accepted: option httplog, option httplog clf)", args[0])
		return false, false
	}
	return len(args) == 1, true
}

// httplogFormat is the format of the option httplog in force: the
// section's own, else defaults'.
func (p *parser) httplogFormat() string {
	clf := p.httplogCLF
	if p.hs.httplog {
		clf = p.hs.httplogCLF
	}
	if clf {
		return lbconfig.HTTPLogCLFFormat
	}
	return lbconfig.HTTPLogFormat
}

// capture reads `capture request|response header NAME len N` and
// `capture cookie NAME len N`.
func (p *parser) capture(l line) {
	const form = "capture request header NAME len N, capture response header NAME len N or capture cookie NAME len N"
	w := l.words[1:]
	c := lbconfig.Capture{}
	switch {
	case len(w) == 4 && w[0] == "cookie" && w[2] == "len":
		c.Name = w[1]
	case len(w) == 5 && (w[0] == "request" || w[0] == "response") && w[1] == "header" && w[3] == "len":
		c.Response, c.Name, w = w[0] == "response", w[2], w[1:]
	default:
		p.errorf(l, "capture", "capture takes %s, got %q", form, strings.Join(w, " "))
		return
	}
	n, err := strconv.Atoi(w[3])
	if err != nil || n <= 0 {
		p.errorf(l, "capture", "capture %s: len %q is not a positive length (accepted: a number of bytes, such as 64)", c.Name, w[3])
		return
	}
	c.Len = n
	if w[0] != "cookie" {
		p.hs.fe.Captures = append(p.hs.fe.Captures, c)
		return
	}
	if p.hs.fe.CaptureCookie != nil {
		p.errorf(l, "capture", "'capture cookie' : only one capture cookie is allowed per frontend (accepted: one capture cookie line)")
		return
	}
	if n > 63 {
		p.warnf(l, "truncating capture length to 63 bytes for frontend '%s'.", p.sectionName())
		c.Len = 63
	}
	p.hs.fe.CaptureCookie = &c
}

// sectionName is the name of the frontend or listen section being read.
func (p *parser) sectionName() string {
	if p.kind == secListen && p.ls != nil {
		return p.ls.name
	}
	if p.fe != nil {
		return p.fe.Name
	}
	return ""
}

// httpMark records the first HTTP-only keyword of the section.
func (p *parser) httpMark(l line, kw string) {
	if p.hs.first == 0 {
		p.hs.first, p.hs.firstKw = l.num, kw
	}
	switch {
	case kw == "http-request":
		if p.hs.reqLine == 0 {
			p.hs.reqLine = l.num
		}
	case kw == "http-response":
		if p.hs.respLine == 0 {
			p.hs.respLine = l.num
		}
	case kw != "acl" && p.hs.strictFirst == 0:
		p.hs.strictFirst, p.hs.strictFirstKw = l.num, kw
	}
}

// httpProxyOf is the rules the keyword goes to: the frontend's in a
// frontend or listen, the backend's in a backend.
func (p *parser) httpProxyOf() *lbconfig.HTTPProxy {
	if p.kind == secBackend {
		return &p.hs.be.HTTPProxy
	}
	return &p.hs.fe.HTTPProxy
}

// httpLine reads an HTTP keyword of a frontend, backend or listen
// section; false if l is not one.
func (p *parser) httpLine(l line) bool {
	kw := keyword(l.words)
	hp := p.httpProxyOf()
	switch kw {
	case "acl":
		p.httpMark(l, kw)
		p.acl(l, hp)
	case "use_backend":
		if p.kind == secBackend {
			return false
		}
		p.httpMark(l, kw)
		args := l.words[1:]
		if len(args) == 0 {
			p.errorf(l, kw, "use_backend needs a backend name (accepted: use_backend NAME [if|unless CONDITION])")
			return true
		}
		if strings.Contains(args[0], "%[") {
			p.errorf(l, kw, "use_backend %s: a backend named by a sample expression is not supported by vipstack (accepted: a backend name)", args[0])
			return true
		}
		cond, ok := p.cond(l, kw, args[1:], true)
		if !ok {
			return true
		}
		p.source(lbconfig.ItemKey(p.key, "use_backend "+args[0]), l)
		p.hs.fe.UseBackends = append(p.hs.fe.UseBackends, lbconfig.UseBackend{Backend: args[0], Cond: cond})
		p.hs.useBackend = true
	case "http-request":
		p.httpMark(l, kw)
		p.finalRule(l, hp)
		p.misplaced(l, kw)
		p.httpRequest(l, hp)
	case "http-response":
		p.httpMark(l, kw)
		p.httpResponse(l, hp)
	case "option originalto":
		if !p.once(l, kw) {
			return true
		}
		if ot, ok := p.originalTo(l); ok {
			hp.OriginalTo = ot
		}
	case "option http-buffer-request":
		if _, ok := p.nargs(l, 2, 0, 0, ""); ok && p.once(l, kw) {
			p.httpMark(l, kw)
			hp.BufferRequest = true
		}
	case "compression":
		p.httpMark(l, kw)
		if hp.Compression == nil {
			hp.Compression = &lbconfig.Compression{}
		}
		p.compression(l, hp.Compression)
	case "redirect":
		p.httpMark(l, kw)
		p.misplaced(l, kw)
		if r, ok := p.redirect(l, l.words[1:]); ok {
			hp.Redirects = append(hp.Redirects, r)
			p.hs.redirect = true
		}
	case "option forwardfor":
		if !p.once(l, kw) {
			return true
		}
		if ff, ok := p.forwardFor(l); ok {
			hp.ForwardFor = ff
		}
	case "option http-server-close", "option httpclose", "option http-keep-alive":
		if _, ok := p.nargs(l, 2, 0, 0, ""); ok && p.once(l, kw) {
			hp.Conn = connMode(kw)
		}
	case "option httplog":
		if p.kind == secBackend {
			return false
		}
		if clf, ok := p.httplogArgs(l); ok && p.once(l, kw) {
			p.httpMark(l, kw)
			p.hs.httplog, p.hs.httplogCLF = true, clf
		}
	case "errorfile":
		if code, body, ok := p.readErrorfile(l); ok {
			if hp.ErrorFiles == nil {
				hp.ErrorFiles = map[int][]byte{}
			}
			hp.ErrorFiles[code] = body
		}
	case "stats enable", "stats uri", "stats refresh", "stats auth", "stats hide-version",
		"stats admin", "stats realm", "stats show-desc", "stats show-legends", "stats show-node":
		if p.kind == secListen {
			return false
		}
		p.httpMark(l, kw)
		p.proxyStats(l, hp)
	case "capture":
		if p.kind == secBackend {
			p.warnf(l, "'capture' ignored because backend '%s' has no frontend capability.", p.be.Name)
			return true
		}
		p.httpMark(l, kw)
		p.capture(l)
	case "monitor-uri":
		if p.kind != secFrontend {
			return false
		}
		p.httpMark(l, kw)
		if args, ok := p.nargs(l, 1, 1, 1, "a URI"); ok && p.once(l, kw) {
			p.hs.fe.MonitorURI = args[0]
		}
	case "cookie":
		if p.kind == secFrontend {
			return false
		}
		p.httpMark(l, kw)
		p.cookie(l)
	case "ignore-persist":
		if p.kind == secFrontend {
			return false
		}
		p.httpMark(l, kw)
		if cond, ok := p.cond(l, kw, l.words[1:], false); ok {
			p.hs.be.IgnorePersist = append(p.hs.be.IgnorePersist, cond)
		}
	default:
		return false
	}
	return true
}

// acl reads `acl NAME CRITERION [FLAGS] VALUE...`.
func (p *parser) acl(l line, hp *lbconfig.HTTPProxy) {
	if len(l.words) < 3 {
		p.errorf(l, "acl", "acl needs a name and a criterion (accepted: acl NAME CRITERION [-i] [-m METHOD] [VALUE...])")
		return
	}
	name := l.words[1]
	t, ok := p.aclTest(l, l.words[2:], true)
	if !ok {
		return
	}
	if hp.ACLs == nil {
		hp.ACLs = map[string][]lbconfig.ACLTest{}
	}
	p.source(lbconfig.ItemKey(p.key, "acl "+name), l)
	hp.ACLs[name] = append(hp.ACLs[name], t)
}

// matchMethods are the -m values vipstack accepts.
const matchMethods = "beg dom end found reg str sub"

// aclTest reads CRITERION [FLAGS] VALUE... of an acl line (named) or
// an anonymous acl.
func (p *parser) aclTest(l line, words []string, named bool) (lbconfig.ACLTest, bool) {
	var t lbconfig.ACLTest
	crit := words[0]
	written := crit
	if strings.Contains(crit, ",") {
		e, err := lbconfig.ParseSampleExpr(crit)
		switch {
		case err != nil:
			p.errorf(l, "acl", "acl criterion %q: %v", crit, err)
			return t, false
		case len(e.Convs) == 0:
			p.errorf(l, "acl", "acl criterion %q: arguments after a comma are not supported by vipstack (accepted: %s)", crit, lbconfig.HTTPFetchNames())
			return t, false
		}
		crit, t.Conv = e.Fetch, e
	}
	fetch, arg := crit, ""
	if i := strings.IndexByte(crit, '('); i > 0 && strings.HasSuffix(crit, ")") {
		fetch, arg = crit[:i], crit[i+1:len(crit)-1]
	}
	match, ok := lbconfig.HTTPFetches[fetch]
	if !ok {
		p.errorf(l, "acl", "acl criterion %q is not supported by vipstack (accepted: %s)", crit, lbconfig.HTTPFetchNames())
		return t, false
	}
	if t.Conv != nil {
		// haproxy: with converters the acl matches the converters'
		// output (a string, -m str unless said), and its keyword must
		// be a sample fetch, not a derived acl keyword such as path_beg.
		if !slices.Contains(lbconfig.ConvFetches, fetch) {
			p.errorf(l, "acl", "acl criterion %q: converters after %s are not supported by vipstack (accepted: converters after %s)", written, fetch, strings.Join(lbconfig.ConvFetches, ", "))
			return t, false
		}
		match = "str"
	}
	hdr := fetch == "hdr" || fetch == "req.hdr" || strings.HasPrefix(fetch, "hdr_")
	switch {
	case hdr && arg == "":
		p.errorf(l, "acl", "acl criterion %q needs a header name (accepted: %s(NAME))", crit, fetch)
		return t, false
	case fetch == "var":
		if err := lbconfig.CheckVarName(arg); err != nil {
			p.errorf(l, "acl", "acl criterion %q: %v", crit, err)
			return t, false
		}
	case !hdr && arg != "":
		p.errorf(l, "acl", "acl criterion %q takes no argument in vipstack", crit)
		return t, false
	}
	base := fetch
	if i := strings.IndexByte(fetch, '_'); i > 0 && fetch != "ssl_fc" && fetch != "ssl_fc_sni" && fetch != "src_port" && fetch != "dst_port" && !strings.HasPrefix(fetch, "always_") {
		base = fetch[:i]
	}
	if base == "req.hdr" {
		base = "hdr"
	}
	t.Fetch, t.Arg, t.Match, t.Keyword = base, arg, match, fetch
	rest := words[1:]
	for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
		switch rest[0] {
		case "-i":
			t.Insensitive = true
		case "-m":
			if len(rest) < 2 || !inList(matchMethods, rest[1]) {
				got := ""
				if len(rest) > 1 {
					got = " " + rest[1]
				}
				p.errorf(l, "acl", "acl: -m%s is not a match method vipstack supports (accepted: -m %s)", got, commas(matchMethods))
				return t, false
			}
			if match == "ip" || match == "bool" || match == "meth" || match == "int" {
				p.errorf(l, "acl", "acl: -m %s with %s is not supported by vipstack (accepted: %s without -m)", rest[1], crit, crit)
				return t, false
			}
			t.Match = rest[1]
			rest = rest[1:]
		case "--":
			rest = rest[1:]
			goto values
		default:
			p.errorf(l, "acl", "acl flag %s is not supported by vipstack (accepted: -i, -m METHOD, --)", rest[0])
			return t, false
		}
		rest = rest[1:]
	}
values:
	t.Values = slices.Clone(rest)
	switch {
	case t.Match == "":
		p.errorf(l, "acl", "acl %s: matching method must be specified first (using '-m') when using a sample fetch of this type ('var') (accepted: -m %s)", crit, commas(matchMethods))
		return t, false
	case t.Match == "bool" && len(t.Values) > 0:
		p.errorf(l, "acl", "acl %s takes no value (got %q)", crit, strings.Join(t.Values, " "))
		return t, false
	case t.Match != "bool" && t.Match != "found" && len(t.Values) == 0 && !slices.Contains(words, "--"):
		// haproxy accepts an acl without values, which never matches,
		// and warns about a named one (not an anonymous one, measured);
		// `--` says it is meant. vipstack says so about both.
		if named {
			p.warnf(l, "parsing acl keyword '%s' : no pattern to match against were provided, so this ACL will never match. "+
				"If this is what you intended, please add '--' to get rid of this warning. "+
				"If you intended to match only for existence, please use '-m found'. "+
				"If you wanted to force an int to match as a bool, please use '-m bool'.", written)
		} else {
			p.warnf(l, "acl %s has no value to match: it never matches", crit)
		}
	}
	if err := lbconfig.CompileACL(&t); err != nil {
		p.errorf(l, "acl", "acl %s: %v", crit, err)
		return t, false
	}
	return t, true
}

// cond reads `[if|unless CONDITION]` from words; optional says whether
// none may be given.
func (p *parser) cond(l line, kw string, words []string, optional bool) (*lbconfig.Cond, bool) {
	if len(words) == 0 {
		if !optional {
			p.errorf(l, kw, "%s needs a condition (accepted: if|unless CONDITION)", kw)
			return nil, false
		}
		return nil, true
	}
	if words[0] != "if" && words[0] != "unless" {
		p.errorf(l, kw, "%s: %q where if or unless was expected (accepted: ... [if|unless CONDITION])", kw, words[0])
		return nil, false
	}
	c := &lbconfig.Cond{Unless: words[0] == "unless"}
	var and []lbconfig.CondTerm
	ws := words[1:]
	if len(ws) == 0 {
		p.errorf(l, kw, "%s %s needs a condition (accepted: acl names, !, ||, { anonymous acl })", kw, words[0])
		return nil, false
	}
	for i := 0; i < len(ws); i++ {
		w := ws[i]
		switch {
		case w == "||" || w == "or":
			if len(and) == 0 {
				p.errorf(l, kw, "%s: %s without a condition before it", kw, w)
				return nil, false
			}
			c.Or = append(c.Or, and)
			and = nil
			continue
		}
		neg := false
		if w == "!" {
			neg = true
			i++
			if i == len(ws) {
				p.errorf(l, kw, "%s: ! at the end of the condition", kw)
				return nil, false
			}
			w = ws[i]
		} else if strings.HasPrefix(w, "!") {
			neg, w = true, w[1:]
		}
		if w == "{" {
			end := slices.Index(ws[i+1:], "}")
			if end < 1 {
				p.errorf(l, kw, "%s: anonymous acl { ... } is not closed or empty", kw)
				return nil, false
			}
			t, ok := p.aclTest(l, ws[i+1:i+1+end], false)
			if !ok {
				return nil, false
			}
			and = append(and, lbconfig.CondTerm{Neg: neg, Anon: &t})
			i += end + 1
			continue
		}
		and = append(and, lbconfig.CondTerm{Neg: neg, Name: w})
	}
	if len(and) == 0 {
		p.errorf(l, kw, "%s: the condition ends with ||", kw)
		return nil, false
	}
	c.Or = append(c.Or, and)
	return c, true
}

// splitCond cuts words at if/unless.
func splitCond(words []string) (args, cond []string) {
	for i, w := range words {
		if w == "if" || w == "unless" {
			return words[:i], words[i:]
		}
	}
	return words, nil
}

// httpRequest reads `http-request ACTION ... [if|unless COND]`.
func (p *parser) httpRequest(l line, hp *lbconfig.HTTPProxy) {
	if len(l.words) < 2 {
		p.errorf(l, "http-request", "http-request needs an action (accepted: %s)", lbconfig.HTTPActions)
		return
	}
	action := l.words[1]
	args, condWords := splitCond(l.words[2:])
	r := lbconfig.HTTPRule{Action: action, At: p.at(l)}
	bad := func(form string) {
		p.errorf(l, "http-request", "http-request %s takes %s, got %q", action, form, strings.Join(args, " "))
	}
	switch action {
	case "set-header", "add-header", "del-header", "replace-header", "replace-value", "replace-path", "replace-uri":
		if !p.headerRule(l, "http-request", &r, args, bad) {
			return
		}
	case "set-path":
		if len(args) != 1 {
			bad("a path")
			return
		}
		r.Value = args[0]
		if err := lbconfig.CheckHTTPValue(r.Value); err != nil {
			p.errorf(l, "http-request", "http-request set-path: %v", err)
			return
		}
	case "allow":
		if len(args) != 0 {
			bad("no value")
			return
		}
	case "deny":
		r.Status = 403
		switch {
		case len(args) == 0:
		case len(args) == 2 && args[0] == "deny_status":
			n, err := strconv.Atoi(args[1])
			if err != nil || n < 200 || n > 599 {
				p.errorf(l, "http-request", "http-request deny: deny_status %q is not a status code (accepted: 200..599)", args[1])
				return
			}
			r.Status = n
		default:
			bad("[deny_status CODE]")
			return
		}
	case "use-service":
		if !p.useServiceArgs(l, &r, args) {
			return
		}
	case "return":
		if !p.httpReturn(l, &r, args) { // httpreturn.go
			return
		}
	case "redirect":
		rr, ok := p.redirect(l, l.words[2:])
		if !ok {
			return
		}
		rr.Action = "redirect"
		hp.Rules = append(hp.Rules, rr)
		return
	default:
		v, isVar := strings.CutPrefix(action, "set-var(")
		if !isVar || !strings.HasSuffix(v, ")") {
			p.errorf(l, "http-request", "http-request %s is not supported by vipstack (accepted: %s)", action, lbconfig.HTTPActions)
			return
		}
		r.Action, r.Name = "set-var", v[:len(v)-1]
		if err := lbconfig.CheckVarName(r.Name); err != nil {
			p.errorf(l, "http-request", "http-request %s: %v", action, err)
			return
		}
		switch len(args) {
		case 0:
			p.errorf(l, "http-request", "http-request %s: missing fetch method (accepted: %s)", action, lbconfig.VarFetches)
			return
		case 1:
		default:
			bad("one sample expression")
			return
		}
		r.Value = args[0]
		if err := lbconfig.CheckVarExpr(r.Value); err != nil {
			p.errorf(l, "http-request", "http-request %s: %v", action, err)
			return
		}
	}
	cond, ok := p.cond(l, "http-request "+action, condWords, true)
	if !ok {
		return
	}
	r.Cond = cond
	hp.Rules = append(hp.Rules, r)
}

// compression reads `compression algo NAME...`, `compression type
// TYPE...` or `compression offload` into c (lines add to it).
func (p *parser) compression(l line, c *lbconfig.Compression) {
	if len(l.words) < 2 {
		p.errorf(l, "compression", "'compression' expects 'algo', 'type' or 'offload'")
		return
	}
	args := l.words[2:]
	switch l.words[1] {
	case "algo":
		if len(args) == 0 {
			p.errorf(l, "compression", "'compression' expects <algorithm>. (accepted: %s)", strings.Join(lbconfig.CompressionAlgos, ", "))
			return
		}
		for _, a := range args {
			if !slices.Contains(lbconfig.CompressionAlgos, a) {
				p.errorf(l, "compression", "'compression' : '%s' is not a supported algorithm. (accepted by vipstack: %s)", a, strings.Join(lbconfig.CompressionAlgos, ", "))
				return
			}
		}
		c.Algos = append(c.Algos, args...)
	case "type":
		if len(args) == 0 {
			p.errorf(l, "compression", "'compression' expects <type>. (accepted: MIME type prefixes such as text/html)")
			return
		}
		c.Types = append(c.Types, args...)
	case "offload":
		if p.kind == secDefaults {
			p.warnf(l, "'compression' : 'offload' ignored in 'defaults' section.")
			return
		}
		c.Offload = true
	default:
		p.errorf(l, "compression", "'compression' expects 'algo', 'type' or 'offload', got %q", l.words[1])
	}
}

// headerRule reads the arguments of an http-request or http-response
// (kw) rule r that edits headers (set-header, add-header, del-header) or
// rewrites a value (replace-header, replace-value, replace-path,
// replace-uri); bad reports a wrong number of them.
func (p *parser) headerRule(l line, kw string, r *lbconfig.HTTPRule, args []string, bad func(form string)) bool {
	switch r.Action {
	case "set-header", "add-header":
		if len(args) != 2 {
			bad("a header name and a value")
			return false
		}
		r.Name, r.Value = args[0], args[1]
		if err := lbconfig.CheckHTTPValue(r.Value); err != nil {
			p.errorf(l, kw, "%s %s %s: %v", kw, r.Action, r.Name, err)
			return false
		}
	case "del-header":
		if len(args) != 1 {
			bad("a header name (-m is not supported by vipstack)")
			return false
		}
		r.Name = args[0]
	default:
		return p.replaceRule(l, kw, r, args)
	}
	return true
}

// replaceRule reads the arguments of a replace-header|replace-value
// (NAME REGEX FORMAT) or replace-path|replace-uri (REGEX FORMAT) rule.
func (p *parser) replaceRule(l line, kw string, r *lbconfig.HTTPRule, args []string) bool {
	want, form := 3, "a header name, a regex and a replacement"
	if r.Action == "replace-path" || r.Action == "replace-uri" {
		want, form = 2, "a regex and a replacement"
	}
	if len(args) != want {
		p.errorf(l, kw, "%s %s takes %s, got %q", kw, r.Action, form, strings.Join(args, " "))
		return false
	}
	if want == 3 {
		r.Name, args = args[0], args[1:]
	}
	r.Match, r.Value = args[0], args[1]
	if err := lbconfig.CompileRule(r); err != nil {
		p.errorf(l, kw, "%s %s: %v", kw, r.Action, err)
		return false
	}
	if err := lbconfig.CheckHTTPValue(r.Value); err != nil {
		p.errorf(l, kw, "%s %s: %v", kw, r.Action, err)
		return false
	}
	return true
}

// httpResponse reads `http-response ACTION ... [if|unless COND]`.
func (p *parser) httpResponse(l line, hp *lbconfig.HTTPProxy) {
	if len(l.words) < 2 {
		p.errorf(l, "http-response", "http-response needs an action (accepted: %s)", lbconfig.HTTPResponseActions)
		return
	}
	action := l.words[1]
	args, condWords := splitCond(l.words[2:])
	r := lbconfig.HTTPRule{Action: action, At: p.at(l)}
	bad := func(form string) {
		p.errorf(l, "http-response", "http-response %s takes %s, got %q", action, form, strings.Join(args, " "))
	}
	switch action {
	case "set-header", "add-header", "del-header", "replace-header", "replace-value":
		if !p.headerRule(l, "http-response", &r, args, bad) {
			return
		}
		if err := lbconfig.CheckResponseValue(r.Value); err != nil {
			p.errorf(l, "http-response", "http-response %s: %v", action, err)
			return
		}
	case "set-status":
		if len(args) == 3 && args[1] == "reason" {
			p.errorf(l, "http-response", "http-response set-status: reason %q is not supported by vipstack, whose server writes the status's standard reason phrase (accepted: http-response set-status CODE)", args[2])
			return
		}
		if len(args) != 1 {
			bad("a status code")
			return
		}
		n, err := strconv.Atoi(args[0])
		if err != nil || n < 100 || n > 999 {
			p.errorf(l, "http-response", "http-response set-status: expects an integer status code between 100 and 999, got %q", args[0])
			return
		}
		r.Status = n
	default:
		p.errorf(l, "http-response", "http-response %s is not supported by vipstack (accepted: %s)", action, lbconfig.HTTPResponseActions)
		return
	}
	cond, ok := p.cond(l, "http-response "+action, condWords, true)
	if !ok {
		return
	}
	p.responseCond(l, cond, hp)
	r.Cond = cond
	hp.ResponseRules = append(hp.ResponseRules, r)
}

// requestOnly are the acl fetches (lbconfig.ACLTest.Fetch) that have no
// value once the answer is in: in an http-response condition haproxy
// warns and they never match.
var requestOnly = map[string]bool{"path": true, "url": true, "base": true, "hdr": true}

// responseCond makes the terms of an http-response condition that use
// only request fetches never match (false, before a "!"), as haproxy
// does, and warns in its words.
func (p *parser) responseCond(l line, c *lbconfig.Cond, hp *lbconfig.HTTPProxy) {
	if c == nil {
		return
	}
	where := "frontend http-response header rule"
	if p.kind != secFrontend {
		where = "backend http-response header rule"
	}
	never := &lbconfig.ACLTest{Fetch: "always_false", Match: "bool"}
	for _, and := range c.Or {
		for i := range and {
			t := &and[i]
			if t.Anon != nil {
				if requestOnly[t.Anon.Fetch] {
					p.warnf(l, "anonymous acl will never match because it uses keyword '%s' which is incompatible with '%s'", t.Anon.Keyword, where)
					t.Anon = never
				}
				continue
			}
			tests, ok := hp.ACLs[t.Name]
			if !ok || slices.ContainsFunc(tests, func(a lbconfig.ACLTest) bool { return !requestOnly[a.Fetch] }) {
				continue
			}
			p.warnf(l, "acl '%s' will never match because it only involves keywords that are incompatible with '%s'", t.Name, where)
			t.Name, t.Anon = "", never
		}
	}
}

// redirect reads `location|prefix|scheme TO [code N] [drop-query]
// [append-slash] [if|unless COND]`.
func (p *parser) redirect(l line, words []string) (lbconfig.HTTPRule, bool) {
	r := lbconfig.HTTPRule{Action: "redirect", Status: 302, At: p.at(l)}
	args, condWords := splitCond(words)
	const form = "location|prefix|scheme TARGET [code 301|302|303|307|308] [drop-query] [append-slash] [if|unless CONDITION]"
	if len(args) < 2 || (args[0] != "location" && args[0] != "prefix" && args[0] != "scheme") {
		p.errorf(l, "redirect", "redirect takes %s, got %q", form, strings.Join(words, " "))
		return r, false
	}
	r.Kind, r.To = args[0], args[1]
	if strings.Contains(r.To, "%[") {
		if err := lbconfig.CheckHTTPValue(r.To); err != nil {
			p.errorf(l, "redirect", "redirect %s: %v", r.Kind, err)
			return r, false
		}
	}
	for i := 2; i < len(args); i++ {
		switch args[i] {
		case "code":
			if i+1 == len(args) {
				p.errorf(l, "redirect", "redirect: code needs a value (accepted: 301, 302, 303, 307, 308)")
				return r, false
			}
			i++
			n, err := strconv.Atoi(args[i])
			if err != nil || !slices.Contains([]int{301, 302, 303, 307, 308}, n) {
				p.errorf(l, "redirect", "redirect: code %q is not a redirect code (accepted: 301, 302, 303, 307, 308)", args[i])
				return r, false
			}
			r.Status = n
		case "drop-query":
			r.DropQuery = true
		case "append-slash":
			r.AppendSlash = true
		default:
			p.errorf(l, "redirect", "redirect option %q is not supported by vipstack (accepted: code N, drop-query, append-slash)", args[i])
			return r, false
		}
	}
	cond, ok := p.cond(l, "redirect", condWords, true)
	if !ok {
		return r, false
	}
	r.Cond = cond
	return r, true
}

// cookie reads a backend's `cookie NAME [rewrite|insert|prefix]
// [indirect] [nocache] [httponly] [secure]`.
func (p *parser) cookie(l line) {
	if !p.once(l, "cookie") {
		return
	}
	if len(l.words) < 2 {
		p.errorf(l, "cookie", "cookie needs a name (accepted: cookie NAME [insert|prefix|rewrite] [indirect] [nocache] [httponly] [secure])")
		return
	}
	c := &lbconfig.Cookie{Name: l.words[1]}
	for _, w := range l.words[2:] {
		switch w {
		case "insert", "prefix", "rewrite":
			if c.Mode != "" {
				p.errorf(l, "cookie", "cookie: %s and %s together (accepted: one of insert, prefix, rewrite)", c.Mode, w)
				return
			}
			c.Mode = w
		case "indirect":
			c.Indirect = true
		case "nocache":
			c.NoCache = true
		case "httponly":
			c.HTTPOnly = true
		case "secure":
			c.Secure = true
		default:
			p.errorf(l, "cookie", "cookie option %q is not supported by vipstack (accepted: insert, prefix, rewrite, indirect, nocache, httponly, secure)", w)
			return
		}
	}
	p.hs.be.Cookie = c
}

// httpMode handles `mode` in frontend and backend.
func (p *parser) httpMode(l line) {
	if !p.once(l, "mode") {
		return
	}
	args, ok := p.nargs(l, 1, 1, 1, "tcp or http")
	if !ok {
		return
	}
	switch args[0] {
	case "tcp", "http":
		p.hs.mode, p.hs.modeLine = args[0], l.num
	default:
		p.errorf(l, "mode", "mode %q is not a haproxy mode (accepted: tcp, http)", args[0])
	}
}

// sectionHTTP reports whether the section being closed is in mode http,
// and refuses HTTP keywords in a TCP one.
func (p *parser) sectionHTTP(mode string) bool {
	if mode == "" {
		mode = p.defMode
	}
	if mode == "http" {
		return true
	}
	p.tcpModeHTTP() // tcprequest.go
	return false
}

// httpFrontendEnd makes the frontend an HTTP one when it is in mode
// http, with defaults' HTTP settings under its own.
func (p *parser) httpFrontendEnd(fe *lbconfig.Frontend, mode string, ownFormat bool) {
	if !p.sectionHTTP(mode) {
		p.ownForwardForIgnored("frontend", fe.Name, p.hs.fe.ForwardFor)
		return
	}
	h := p.hs.fe
	h.DontLogNull = p.dontLogNull
	p.inheritHTTP(&h.HTTPProxy)
	h.HTTPLog = p.hs.httplog || (p.httplogAt != 0 && !ownFormat)
	if h.HTTPLog && !ownFormat {
		p.feLogFormat = p.httplogFormat()
	}
	fe.HTTP = &h
}

// httpBackendEnd makes the backend an HTTP one in mode http.
func (p *parser) httpBackendEnd(be *lbconfig.Backend, mode string) {
	if !p.sectionHTTP(mode) {
		p.ownForwardForIgnored("backend", be.Name, p.hs.be.ForwardFor)
		return
	}
	h := p.hs.be
	p.inheritHTTP(&h.HTTPProxy)
	if b := string(be.Balance); strings.HasPrefix(b, "hdr(") && strings.HasSuffix(b, ")") {
		be.Balance, h.HashHeader = lbconfig.Header, b[4:len(b)-1]
	}
	be.HTTP = &h
}

func (p *parser) inheritHTTP(h *lbconfig.HTTPProxy) {
	h.BufferRequest = h.BufferRequest || p.hd.bufferReq
	if h.OriginalTo == nil && p.hd.originalTo != nil {
		ot := *p.hd.originalTo
		h.OriginalTo = &ot
	}
	if h.ForwardFor == nil && p.hd.forwardFor != nil {
		ff := *p.hd.forwardFor
		h.ForwardFor = &ff
	}
	if _, own := p.seen["option http-server-close"]; !own && h.Conn == "" {
		if _, own := p.seen["option httpclose"]; !own {
			if _, own := p.seen["option http-keep-alive"]; !own {
				h.Conn = p.hd.conn
			}
		}
	}
	if d := p.hd.compression; d != nil {
		c := lbconfig.Compression{Algos: slices.Clone(d.Algos), Types: slices.Clone(d.Types)}
		if own := h.Compression; own != nil {
			c.Algos, c.Types, c.Offload = append(c.Algos, own.Algos...), append(c.Types, own.Types...), own.Offload
		}
		h.Compression = &c
	}
	for code, body := range p.hd.errorFiles {
		if h.ErrorFiles == nil {
			h.ErrorFiles = map[int][]byte{}
		}
		if _, own := h.ErrorFiles[code]; !own {
			h.ErrorFiles[code] = body
		}
	}
}

// proxyStats reads a stats keyword of an HTTP frontend or backend: each
// enables the stats page there, at `stats uri` (haproxy's default
// /haproxy?stats).
func (p *parser) proxyStats(l line, hp *lbconfig.HTTPProxy) {
	kw := keyword(l.words)
	if hp.Stats == nil {
		hp.Stats = &lbconfig.Stats{URI: lbconfig.DefaultStatsURI}
		if p.kind == secBackend {
			hp.Stats.Name = p.be.Name
		} else {
			hp.Stats.Name = p.fe.Name
		}
	}
	st := hp.Stats
	switch kw {
	case "stats enable":
		if p.once(l, kw) {
			p.nargs(l, 2, 0, 0, "")
		}
	case "stats hide-version":
		if _, ok := p.nargs(l, 2, 0, 0, ""); ok && p.once(l, kw) {
			st.HideVersion = true
		}
	case "stats uri":
		if args, ok := p.nargs(l, 2, 1, 1, "a URI prefix"); ok && p.once(l, kw) {
			st.URI = args[0]
		}
	case "stats refresh":
		if args, ok := p.nargs(l, 2, 1, 1, "a delay, in seconds without a unit"); ok && p.once(l, kw) {
			st.Refresh, _ = p.timeArg(l, kw, args[0], sUnit)
		}
	case "stats auth":
		args, ok := p.nargs(l, 2, 1, 1, "USER:PASSWORD")
		if !ok {
			return
		}
		user, pass, found := strings.Cut(args[0], ":")
		if !found {
			p.errorf(l, "stats", "stats auth %q has no ':' (accepted: USER:PASSWORD)", args[0])
			return
		}
		st.Users = append(st.Users, lbconfig.UserPass{User: user, Pass: pass})
	default:
		p.statsOption(l, kw, st)
	}
}

// httpFormat reports whether a log-format line of the current section
// may use HTTP variables: the section is in mode http so far (its own
// mode line, or defaults').
func (p *parser) httpFormat() bool {
	switch {
	case p.kind == secDefaults:
		return p.defMode == "http"
	case p.kind == secListen && p.ls != nil:
		return p.ls.mode == "http"
	case p.hs != nil && p.hs.mode != "":
		return p.hs.mode == "http"
	}
	return p.defMode == "http"
}

// ownForwardForIgnored warns, in haproxy's words, about a TCP section's
// own option forwardfor (defaults' is inheritedHTTP's).
func (p *parser) ownForwardForIgnored(what, name string, ff *lbconfig.ForwardFor) {
	if at, ok := p.seen["option forwardfor"]; ok && ff != nil {
		p.warnf(line{num: at}, "'option forwardfor' ignored for %s '%s' as it requires HTTP mode.", what, name)
	}
	if at, ok := p.seen["option originalto"]; ok {
		p.warnf(line{num: at}, "'option originalto' ignored for %s '%s' as it requires HTTP mode.", what, name)
	} else if p.hd.originalAt != 0 {
		p.warnf(line{num: p.hd.originalAt}, "'option originalto' ignored for %s '%s' as it requires HTTP mode.", what, name)
	}
}

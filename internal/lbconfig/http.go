package lbconfig

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// HTTP mode (haproxy's `mode http`): the model of the frontends' and
// backends' request routing and rewriting, as internal/lb/httpproxy
// carries it out.

// HTTPFrontend is a frontend's HTTP settings; a Frontend with a non-nil
// HTTP is a reverse proxy (mode http), one without relays TCP.
type HTTPFrontend struct {
	HTTPProxy
	// UseBackends are the `use_backend` rules, tried in order before
	// Frontend.Backend (default_backend).
	UseBackends []UseBackend
	// HTTPLog is `option httplog` (or a log-format) in force: the
	// connection log is written per request, in Frontend.Log's format.
	HTTPLog bool
	// DontLogNull leaves out the line of a client that sent nothing
	// (option dontlognull).
	DontLogNull bool
	// MonitorURI is `monitor-uri`: requests for it get the monitor's
	// answer (as a Monitor's), and no log line.
	MonitorURI string
	// LogFormat is the request log's format (HTTPLogFormat for option
	// httplog); empty writes no request lines.
	LogFormat string
	// Captures are `capture request header NAME len N` and `capture
	// response header NAME len N`, in the order written (%hr %hs %hrl
	// %hsl show them).
	Captures []Capture
	// CaptureCookie is `capture cookie NAME len N` (%CC %CS); nil when
	// none.
	CaptureCookie *Capture
	// TCPMode: the frontend says mode tcp, and its default backend is
	// mode http, so its connections are HTTP all the same, as haproxy
	// 2.6 handles them; its "Connect from" lines, one per request, say
	// TCP. It has no HTTP rules of its own.
	TCPMode bool
}

// Capture is one `capture` line of a frontend: the last occurrence of a
// request's or an answer's header (Response), or the first cookie whose
// name begins with Name, cut to Len bytes.
type Capture struct {
	Response bool
	Name     string
	Len      int
}

// HTTPLogVariables are the variables an HTTP frontend's log format may
// show besides LogVariables (haproxy's names):
//
//	tr trg trl  the request's date (local, GMT, local with zone)
//	TR Tr Ta Tq  the request's head, the server's answer, the whole
//	            request, and TR plus the idle time (ms)
//	Ti          idle time before the request (0)
//	Td Tu       the time after the answer's head (-1 without one), and
//	            the whole time but the idle (ms)
//	ST          status code
//	r HM HU HP HQ HV  request line, method, URI, URI without the
//	            query, query, version
//	HPO         the path alone (without scheme, host or query)
//	CC CS       the captured cookie of the request and of the answer
//	            ("-" when none)
//	tsc         termination state with the cookie flags (4 characters)
//	hr hs hrl hsl  captured request and answer headers: {a|b} or, CLF
//	            style (hrl hsl), one word each
var HTTPLogVariables = []string{"CC", "CS", "HM", "HP", "HPO", "HQ", "HU", "HV", "ST", "TR", "Ta", "Td", "Ti", "Tq", "Tr", "Tu", "hr", "hrl", "hs", "hsl", "r", "tr", "trg", "trl", "tsc"}

// ParseHTTPLogFormat is ParseLogFormat for a mode http frontend, whose
// formats may also show HTTPLogVariables.
func ParseHTTPLogFormat(s string) ([]LogItem, error) {
	return parseLogFormat(s, append(slices.Clone(LogVariables), HTTPLogVariables...))
}

// HTTPOnlyVariable is the first variable of an HTTP log format that a
// TCP line cannot show (one of HTTPLogVariables), "" when none.
func HTTPOnlyVariable(format string) string {
	items, err := ParseHTTPLogFormat(format)
	if err != nil {
		return ""
	}
	for _, it := range items {
		if it.Var != "" && !slices.Contains(LogVariables, it.Var) {
			return it.Var
		}
	}
	return ""
}

// HTTPLogFormat is the format of haproxy's `option httplog`.
const HTTPLogFormat = "%ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %CC %CS %tsc %ac/%fc/%bc/%sc/%rc %sq/%bq %hr %hs %{+Q}r"

// HTTPLogCLFFormat is the format of haproxy's `option httplog clf`.
const HTTPLogCLFFormat = `%{+Q}o %{-Q}ci - - [%trg] %r %ST %B "" "" %cp %ms %ft %b %s %TR %Tw %Tc %Tr %Ta %tsc %ac %fc %bc %sc %rc %sq %bq %CC %CS %hrl %hsl`

// HTTPBackend is a backend's HTTP settings (mode http).
type HTTPBackend struct {
	HTTPProxy
	// Cookie is `cookie NAME insert|prefix|rewrite ...`: persistence to
	// the server whose ServerCookies value the client's cookie carries.
	Cookie *Cookie
	// ServerCookies are the servers' `cookie VALUE`, by server name.
	ServerCookies map[string]string
	// IgnorePersist are `ignore-persist if|unless COND`: a request
	// matching one is balanced as if it had no persistence cookie.
	IgnorePersist []*Cond
	// HashHeader is `balance hdr(NAME)`'s header; HashURI `balance uri`.
	HashHeader string
	HashURI    bool
}

// HTTPProxy is what frontends and backends share: ACLs and rules applied
// to each request, in haproxy's order (http-request rules, then
// redirect rules).
type HTTPProxy struct {
	ACLs      map[string][]ACLTest // named acls; lines of one name are ORed
	Rules     []HTTPRule           // http-request rules in order
	Redirects []HTTPRule           // `redirect` rules in order (Action "redirect")
	// ForwardFor is `option forwardfor`; nil when off.
	ForwardFor *ForwardFor
	// OriginalTo is `option originalto`; nil when off.
	OriginalTo *OriginalTo
	// BufferRequest is `option http-buffer-request`: the request's body
	// is read (as much as haproxy's buffer holds) before the request
	// goes to a server, within timeout http-request; on in the
	// frontend or the backend.
	BufferRequest bool
	// Conn is the connection mode: "" (keep-alive, haproxy's default),
	// "server-close" or "close" (option httpclose).
	Conn string
	// ErrorFiles are `errorfile CODE FILE`: the whole answer (status line,
	// headers and body) read from FILE, by status.
	ErrorFiles map[int][]byte
	// Stats serves the stats page at Stats.URI (`stats enable` / `stats
	// uri` in an HTTP frontend or backend); nil when off.
	Stats *Stats
	// ResponseRules are the `http-response` rules in order, applied to
	// the server's answer (HTTPResponseActions).
	ResponseRules []HTTPRule
	// Compression is `compression algo|type|offload`; nil when off.
	Compression *Compression
}

// Compression is a section's `compression` lines: the server's answers
// are compressed with an algorithm the client accepts, as haproxy 2.6
// does. The backend's algorithms and types are used when it has any,
// else the frontend's; offload in either applies.
type Compression struct {
	// Algos are CompressionAlgos in the order written, defaults' first.
	// Among the client's encodings of the best q value the first it
	// lists is chosen; for "*", the algorithm written last (haproxy
	// keeps its list in reverse).
	Algos []string
	// Types are the Content-Type prefixes compressed (case-insensitive);
	// none: any but multipart, and also an answer without a Content-Type.
	Types []string
	// (Without Algos nothing is compressed, as in haproxy.)
	// Offload takes Accept-Encoding out of the request once an
	// algorithm is chosen, so that the server answers uncompressed.
	Offload bool
}

// CompressionAlgos are the `compression algo` names vipstack carries out.
var CompressionAlgos = []string{"gzip", "deflate", "raw-deflate"}

// ForwardFor is `option forwardfor [except NET] [header NAME] [if-none]`.
type ForwardFor struct {
	Header string // default X-Forwarded-For
	Except netip.Prefix
	IfNone bool
}

// OriginalTo is `option originalto [except NET] [header NAME]`: the
// request gets a header (default X-Original-To) with the address the
// client connected to, unless it is in Except. On in the frontend or
// the backend, it adds one header: the backend's name if it sets one,
// none when either section's Except holds the address (haproxy 2.6).
type OriginalTo struct {
	Header string
	Except netip.Prefix
}

// Cookie is a backend's `cookie` line.
type Cookie struct {
	Name     string
	Mode     string // insert, prefix or rewrite
	Indirect bool
	NoCache  bool
	HTTPOnly bool
	Secure   bool
}

// UseBackend is `use_backend NAME [if|unless COND]`.
type UseBackend struct {
	Backend string
	Cond    *Cond
}

// HTTPRule is one `http-request` rule or `redirect` rule.
type HTTPRule struct {
	// Action: set-header, add-header, del-header, set-path, deny,
	// allow, redirect, set-var, replace-header, replace-value,
	// replace-path, replace-uri, use-service; of http-response rules
	// also set-status.
	Action string
	// Name is the header name (set-, add-, del-, replace-header,
	// replace-value), set-var's variable (txn.NAME), or use-service's
	// service (one of HTTPServices).
	Name string
	// Value is the header value or path, a haproxy log-format (see
	// HTTPValueVars); set-var's sample expression (VarFetches); a
	// replace- rule's replacement, where \N is the match's group N.
	Value  string
	Status int // deny's deny_status (default 403); redirect's code (default 302); set-status's
	// Match is a replace- rule's regular expression, matched
	// case-sensitively anywhere in the value, which the replacement
	// then replaces whole (haproxy's semantics); Re is its compiled
	// form (CompileRule).
	Match string
	Re    *regexp.Regexp
	// Redirect: Kind is location, prefix or scheme, To its argument.
	Kind, To string
	// DropQuery and AppendSlash are redirect's options.
	DropQuery, AppendSlash bool
	Cond                   *Cond
	// At is the rule's "file:line", for messages.
	At string
	// Return is `http-request return`'s answer (its Status is the
	// rule's); nil for other actions.
	Return *HTTPReturn
}

// HTTPReturn is the answer of `http-request return`: Status's line, then
// Headers (`hdr NAME FORMAT`, values log-formats as HTTPRule.Value),
// Content-Length, and ContentType when there is a body; Body is the
// text of `string` or `file`, or a log-format (`lf-string`) when
// Format.
type HTTPReturn struct {
	ContentType string
	Body        string
	Format      bool
	Headers     []HTTPReturnHeader
}

// HTTPReturnHeader is one `hdr NAME FORMAT` of http-request return.
type HTTPReturnHeader struct{ Name, Value string }

// Cond is `if|unless` and the condition: terms ORed (||), each a list of
// tests ANDed.
type Cond struct {
	Unless bool
	Or     [][]CondTerm
}

// Holds evaluates c as haproxy does: true when every term of one of its
// or-ed groups holds (term decides a term before its negation), reversed
// by unless; a nil condition holds.
func (c *Cond) Holds(term func(CondTerm) bool) bool {
	if c == nil {
		return true
	}
	v := false
	for _, and := range c.Or {
		all := true
		for _, t := range and {
			if term(t) == t.Neg {
				all = false
				break
			}
		}
		if all {
			v = true
			break
		}
	}
	return v != c.Unless
}

// CondTerm is one named or anonymous ACL, maybe negated (!).
type CondTerm struct {
	Neg  bool
	Name string   // named acl, or
	Anon *ACLTest // an anonymous one ({ ... })
}

// ACLTest is one `acl NAME CRITERION [FLAGS] [VALUES...]` line (or an
// anonymous acl): a fetch, a match method, and values.
type ACLTest struct {
	// Fetch is the sample fetch: path, url, method, src, hdr, req.hdr,
	// ssl_fc, always_true, always_false, var, ...
	Fetch string
	// Keyword is the criterion as written, without its argument
	// (hdr_beg for Fetch hdr), for messages.
	Keyword string
	Arg     string // hdr's header name, var's variable (txn.NAME)
	// Match is str, beg, end, sub, reg, dom, found, ip, bool, len.
	Match       string
	Insensitive bool
	Values      []string
	// Conv, when not nil, holds the converters applied to each sample
	// before matching (Conv.Fetch is the criterion without them).
	Conv *SampleExpr
	// The values compiled by CompileACL.
	Regexps []*regexp.Regexp
	Nets    []netip.Prefix
	Methods []string
	Ints    []IntRange // match int: a value or a range LOW:HIGH
}

// IntRange is an int match's value: Lo to Hi, both included.
type IntRange struct{ Lo, Hi int64 }

// HTTPActions are the http-request actions vipstack carries out.
const HTTPActions = "add-header, allow, del-header, deny, redirect, replace-header, replace-path, replace-uri, replace-value, return, set-header, set-path, set-var(txn.NAME|req.NAME), use-service prometheus-exporter"

// PrometheusExporter is the service of haproxy's built-in Prometheus
// exporter: `http-request use-service prometheus-exporter [if|unless
// COND]` answers the requests its condition selects (every request
// without one) with the figures in haproxy 2.6's exporter's format, as a
// stats listen's Stats.Prometheus does, and ends the section's rules.
const PrometheusExporter = "prometheus-exporter"

// HTTPServices are the services `http-request use-service` may name.
var HTTPServices = []string{PrometheusExporter}

// HTTPResponseActions are the http-response actions vipstack carries out.
const HTTPResponseActions = "add-header, del-header, replace-header, replace-value, set-header, set-status"

// CompileRule compiles a replace- rule's Match into Re (RE2 syntax,
// which is haproxy's PCRE for the expressions such rules use; a PCRE
// feature RE2 lacks, such as a back-reference in the pattern, is an
// error).
func CompileRule(r *HTTPRule) error {
	if !strings.HasPrefix(r.Action, "replace-") {
		return nil
	}
	re, err := regexp.Compile(r.Match)
	if err != nil {
		return fmt.Errorf("regex %q: %v (accepted: an RE2 regular expression)", r.Match, err)
	}
	r.Re = re
	return nil
}

// VarFetches are the sample fetches `http-request set-var` takes as its
// expression (with Converters): the value the variable gets.
const VarFetches = "base, dst, dst_port, hdr(NAME), method, path, req.hdr(NAME), src, src_port, ssl_fc_sni, str(TEXT), url, var(SCOPE.NAME)"

// CheckVarName checks a variable's name as haproxy 2.6 reads it: a scope,
// a dot and a name of letters, digits, dots and underscores. vipstack
// keeps variables for one request (scopes txn and req); sess, proc, res
// and check are refused.
func CheckVarName(v string) error {
	scope, name, ok := strings.Cut(v, ".")
	switch {
	case !ok || !slices.Contains([]string{"proc", "sess", "txn", "req", "res", "check"}, scope):
		return fmt.Errorf("invalid variable name '%s'. A variable name must be start by its scope. The scope can be 'proc', 'sess', 'txn', 'req', 'res' or 'check' (accepted by vipstack: txn.NAME or req.NAME)", v)
	case scope != "txn" && scope != "req":
		return fmt.Errorf("variable %s: scope %s is not supported by vipstack, whose variables live for one request (accepted: txn.NAME or req.NAME)", v, scope)
	case name == "" || strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_')
	}) >= 0:
		return fmt.Errorf("variable %s: invalid name (accepted: letters, digits, '.' and '_' after the scope)", v)
	}
	return nil
}

// CheckVarExpr checks set-var's expression: one of VarFetches, and
// Converters.
func CheckVarExpr(expr string) error {
	e, err := ParseSampleExpr(expr)
	if err != nil {
		return fmt.Errorf("set-var expression %q: %v", expr, err)
	}
	f := e.Fetch
	if t, ok := strings.CutPrefix(f, "str("); ok && strings.HasSuffix(t, ")") && !strings.ContainsAny(t[:len(t)-1], "()") {
		return nil
	}
	if v, ok := strings.CutPrefix(f, "var("); ok && strings.HasSuffix(v, ")") {
		return CheckVarName(v[:len(v)-1])
	}
	switch f {
	case "base", "url":
		return nil
	}
	if !HTTPValueExpr(f) {
		return fmt.Errorf("set-var expression %q is not supported by vipstack (accepted: %s, each with converters %s)", expr, VarFetches, Converters)
	}
	return nil
}

// HTTPFetches are the ACL criteria vipstack evaluates, with their
// implied match methods.
var HTTPFetches = map[string]string{
	"path": "str", "path_beg": "beg", "path_end": "end", "path_reg": "reg", "path_sub": "sub", "path_dir": "dir",
	"url": "str", "url_beg": "beg", "url_end": "end", "url_reg": "reg", "url_sub": "sub",
	"hdr": "str", "hdr_beg": "beg", "hdr_end": "end", "hdr_reg": "reg", "hdr_sub": "sub", "hdr_dom": "dom",
	"req.hdr": "str",
	"method":  "meth", "src": "ip", "dst": "ip", "src_port": "int", "dst_port": "int", "ssl_fc": "bool", "ssl_fc_sni": "str", "always_true": "bool", "always_false": "bool",
	"base": "str", "base_beg": "beg", "base_sub": "sub", "base_end": "end", "base_reg": "reg",
	"var": "", // no implied method: -m is required, as in haproxy
}

// ConvFetches are the acl criteria that may take converters (sample
// fetches giving text, as haproxy's sample fetch keywords).
var ConvFetches = []string{"base", "hdr", "path", "req.hdr", "ssl_fc_sni", "url", "var"}

// HTTPFetchNames lists HTTPFetches for messages.
func HTTPFetchNames() string {
	return "always_false, always_true, base[_beg|_end|_reg|_sub], dst, dst_port, hdr(NAME)[_beg|_dom|_end|_reg|_sub], method, path[_beg|_dir|_end|_reg|_sub], req.hdr(NAME), src, src_port, ssl_fc, ssl_fc_sni, url[_beg|_end|_reg|_sub], var(txn.NAME) -m METHOD"
}

// CompileACL fills the compiled forms of t's values (Regexps, Nets,
// Methods) and checks them.
func CompileACL(t *ACLTest) error {
	t.Regexps, t.Nets, t.Methods, t.Ints = nil, nil, nil, nil
	if t.Fetch == "var" {
		if err := CheckVarName(t.Arg); err != nil {
			return err
		}
		if t.Match == "" && t.Conv == nil {
			return errors.New("matching method must be specified first (using '-m') when using a sample fetch of this type ('var')")
		}
	}
	switch t.Match {
	case "reg":
		for _, v := range t.Values {
			expr := v
			if t.Insensitive {
				expr = "(?i)" + expr
			}
			re, err := regexp.Compile(expr)
			if err != nil {
				return fmt.Errorf("regex %q: %v (accepted: an RE2 regular expression)", v, err)
			}
			t.Regexps = append(t.Regexps, re)
		}
	case "ip":
		for _, v := range t.Values {
			pf, err := netip.ParsePrefix(v)
			if err != nil {
				a, err2 := netip.ParseAddr(v)
				if err2 != nil {
					return fmt.Errorf("%q is not an address or network (accepted: 10.0.0.1, 10.0.0.0/8, fd00::/8)", v)
				}
				pf = netip.PrefixFrom(a, a.BitLen())
			}
			t.Nets = append(t.Nets, pf.Masked())
		}
	case "meth":
		for _, v := range t.Values {
			t.Methods = append(t.Methods, strings.ToUpper(v))
		}
	case "int":
		for _, v := range t.Values {
			r, err := intRange(v)
			if err != nil {
				return err
			}
			t.Ints = append(t.Ints, r)
		}
	}
	return nil
}

// intRange reads an int match's value: N, LOW:HIGH, :HIGH or LOW:.
func intRange(v string) (IntRange, error) {
	bad := fmt.Errorf("%q is not an integer or a range (accepted: 443, 1024:65535, :1023, 1024:)", v)
	lo, hi, isRange := strings.Cut(v, ":")
	r := IntRange{Lo: math.MinInt64, Hi: math.MaxInt64}
	var err error
	if lo != "" {
		if r.Lo, err = strconv.ParseInt(lo, 10, 64); err != nil {
			return r, bad
		}
	}
	if !isRange {
		if lo == "" {
			return r, bad
		}
		r.Hi = r.Lo
		return r, nil
	}
	if hi != "" {
		if r.Hi, err = strconv.ParseInt(hi, 10, 64); err != nil {
			return r, bad
		}
	}
	if lo == "" && hi == "" || r.Lo > r.Hi {
		return r, bad
	}
	return r, nil
}

// HTTPValueVars are the %[...] expressions an http-request header value
// may hold, besides literal text.
const HTTPValueVars = "%[src], %[src_port], %[dst], %[dst_port], %[ssl_fc], %[ssl_fc_sni], %[path], %[method], %[req.hdr(NAME)], %[hdr(NAME)], %[var(txn.NAME)]"

// CheckHTTPValue checks that a header value's %[...] expressions are ones
// vipstack expands: fetches of HTTPValueVars with Converters.
func CheckHTTPValue(v string) error {
	for {
		_, expr, rest, found, err := NextSample(v)
		if err != nil {
			return err
		}
		if !found {
			return nil
		}
		e, err := ParseSampleExpr(expr)
		if err != nil {
			return fmt.Errorf("%%[%s]: %v", expr, err)
		}
		if !HTTPValueExpr(e.Fetch) {
			return fmt.Errorf("%%[%s] is not supported by vipstack (accepted: literal text and %s, each with converters %s)", expr, HTTPValueVars, Converters)
		}
		v = rest
	}
}

// CheckResponseValue checks an http-response rule's value (already
// checked by CheckHTTPValue) as haproxy 2.6 does: the request's path
// and headers (path, base, url, req.hdr) are gone by then, which is
// haproxy's error; hdr() there is the answer's header in haproxy, which
// vipstack does not expand.
func CheckResponseValue(v string) error {
	for {
		_, expr, rest, found, err := NextSample(v)
		if err != nil || !found {
			return err
		}
		fetch, _, _ := strings.Cut(expr, ",")
		name, _, _ := strings.Cut(fetch, "(")
		switch name {
		case "path", "base", "url", "req.hdr":
			// haproxy's words.
			return fmt.Errorf("sample fetch <%s]> may not be reliably used here because it needs 'HTTP request headers' which is not available here", expr)
		case "hdr":
			return fmt.Errorf("%%[%s]: in http-response haproxy's hdr() is the answer's header, which vipstack does not expand (accepted: %s but path, hdr(NAME), req.hdr(NAME))", expr, HTTPValueVars)
		}
		v = rest
	}
}

// HTTPValueExpr reports whether vipstack expands %[expr].
func HTTPValueExpr(expr string) bool {
	switch expr {
	case "src", "src_port", "dst", "dst_port", "ssl_fc", "ssl_fc_sni", "path", "method":
		return true
	}
	for _, f := range []string{"req.hdr(", "hdr("} {
		if strings.HasPrefix(expr, f) && strings.HasSuffix(expr, ")") && len(expr) > len(f)+1 {
			return true
		}
	}
	if v, ok := strings.CutPrefix(expr, "var("); ok && strings.HasSuffix(v, ")") {
		return CheckVarName(v[:len(v)-1]) == nil
	}
	return false
}

// ErrYAMLHTTP is FormatYAML's refusal of a configuration with mode http
// frontends or backends, which the YAML form does not express.
var ErrYAMLHTTP = errors.New("the YAML form has no mode http frontends or backends (accepted there: TCP frontends and backends; write haproxy.cfg instead)")

func noHTTPInYAML(c *Config) error {
	for _, f := range c.Frontends {
		if f.HTTP != nil {
			return fmt.Errorf("frontend %s: %w", f.Name, ErrYAMLHTTP)
		}
	}
	for _, b := range c.Backends {
		if b.HTTP != nil {
			return fmt.Errorf("backend %s: %w", b.Name, ErrYAMLHTTP)
		}
	}
	return nil
}

// httpFrontend checks an HTTP frontend's rules: backends named, acls
// defined.
func (v *validator) httpFrontend(f *Frontend, backends map[string]bool) {
	key := FrontendKey(f.Name)
	mode := map[string]bool{} // backend name -> mode http
	for _, b := range v.c.Backends {
		mode[b.Name] = b.HTTP != nil
	}
	if f.HTTP == nil {
		if mode[f.Backend] {
			v.fail(v.pos(ItemKey(key, "default_backend"), key), key, "default_backend",
				"tcp frontend %s uses backend %s, which is mode http: haproxy handles such connections as HTTP (accepted: an HTTP frontend with TCPMode, as internal/haproxycfg reads it, or the same mode in both)", f.Name, f.Backend)
		}
		return
	}
	if f.HTTP.TCPMode && f.Log != nil {
		v.fail(v.pos(ItemKey(key, "default_backend"), key), key, "default_backend",
			"tcp frontend %s with a log format (option tcplog, log-format) uses backend %s, which is mode http: vipstack does not write haproxy's lines of such a frontend (accepted: no log format in the frontend, or mode http in both)", f.Name, f.Backend)
	}
	if f.Backend != "" && backends[f.Backend] && !mode[f.Backend] {
		v.fail(v.pos(ItemKey(key, "default_backend"), key), key, "default_backend",
			"http frontend '%s' tries to use incompatible tcp backend '%s' as its default backend (see 'mode').", f.Name, f.Backend)
	}
	if f.HTTP.LogFormat != "" {
		if _, err := ParseHTTPLogFormat(f.HTTP.LogFormat); err != nil {
			v.fail(v.pos(ItemKey(key, "log-format"), key), key, "log-format", "%v", err)
		}
	}
	for _, u := range f.HTTP.UseBackends {
		pos := v.pos(ItemKey(key, "use_backend "+u.Backend), key)
		switch {
		case !backends[u.Backend]:
			v.fail(pos, key, "use_backend", "use_backend %q is not a backend (accepted: %s)", u.Backend, v.backendNames())
		case !mode[u.Backend]:
			v.fail(pos, key, "use_backend", "http frontend '%s' tries to use incompatible tcp backend '%s' in a 'use_backend' rule (see 'mode').", f.Name, u.Backend)
		}
		v.cond(key, "use_backend", &f.HTTP.HTTPProxy, u.Cond)
	}
	v.httpProxy(key, &f.HTTP.HTTPProxy)
}

// httpBackend checks an HTTP backend's rules and cookies.
func (v *validator) httpBackend(b *Backend) {
	if b.HTTP == nil {
		return
	}
	key := BackendKey(b.Name)
	v.httpProxy(key, &b.HTTP.HTTPProxy)
	if b.Balance == Header && b.HTTP.HashHeader == "" {
		v.fail(v.pos(ItemKey(key, "balance"), key), key, "balance", "balance hdr needs a header name (accepted: hdr(NAME))")
	}
	for name := range b.HTTP.ServerCookies {
		if !slices.ContainsFunc(b.Servers, func(s Server) bool { return s.Name == name }) {
			v.fail(v.pos(key), key, "cookie", "cookie of server %q: no such server", name)
		}
	}
}

func (v *validator) httpProxy(key string, h *HTTPProxy) {
	if c := h.Compression; c != nil {
		for _, a := range c.Algos {
			if !slices.Contains(CompressionAlgos, a) {
				v.fail(v.pos(ItemKey(key, "compression"), key), key, "compression", "compression algo %q is not supported by vipstack (accepted: %s)", a, strings.Join(CompressionAlgos, ", "))
			}
		}
	}
	for name, tests := range h.ACLs {
		for i := range tests {
			if err := CompileACL(&tests[i]); err != nil {
				v.fail(v.pos(ItemKey(key, "acl "+name), key), key, "acl", "acl %s: %v", name, err)
			}
		}
	}
	for n, rs := range [][]HTTPRule{h.Rules, h.Redirects, h.ResponseRules} {
		kw := "http-request"
		if n == 2 {
			kw = "http-response"
		}
		for i := range rs {
			r := &rs[i]
			v.cond(key, r.Action, h, r.Cond)
			if err := CompileRule(r); err != nil {
				v.fail(r.At, key, kw, "%s %s: %v", kw, r.Action, err)
			}
			if r.Action == "use-service" && (n != 0 || !slices.Contains(HTTPServices, r.Name)) {
				v.fail(r.At, key, kw, "%s use-service %q is not supported by vipstack (accepted: http-request use-service %s)", kw, r.Name, strings.Join(HTTPServices, ", "))
			}
			if r.Action == "set-var" {
				if err := CheckVarName(r.Name); err != nil {
					v.fail(r.At, key, kw, "%s set-var: %v", kw, err)
				}
				if err := CheckVarExpr(r.Value); err != nil {
					v.fail(r.At, key, kw, "%s set-var(%s): %v", kw, r.Name, err)
				}
			}
			if r.Action == "set-header" || r.Action == "add-header" || r.Action == "set-path" || strings.HasPrefix(r.Action, "replace-") {
				if err := CheckHTTPValue(r.Value); err != nil {
					v.fail(r.At, key, kw, "%s %s: %v", kw, r.Action, err)
				}
			}
		}
	}
}

func (v *validator) cond(key, kw string, h *HTTPProxy, c *Cond) {
	if c == nil {
		return
	}
	for _, and := range c.Or {
		for _, t := range and {
			if t.Anon != nil {
				if err := CompileACL(t.Anon); err != nil {
					v.fail(v.pos(key), key, kw, "%v", err)
				}
				continue
			}
			if _, ok := h.ACLs[t.Name]; !ok && !predefinedACL(t.Name) {
				v.fail(v.pos(key), key, kw, "acl %q is not defined in %s (accepted: an acl of the section, or a predefined one: TRUE, FALSE, HTTP, METH_GET, ...)", t.Name, key)
			}
		}
	}
}

// PredefinedACLs are haproxy's predefined ACLs that vipstack knows.
var PredefinedACLs = map[string]ACLTest{
	"TRUE":           {Fetch: "always_true", Match: "bool"},
	"FALSE":          {Fetch: "always_false", Match: "bool"},
	"HTTP":           {Fetch: "always_true", Match: "bool"},
	"METH_CONNECT":   {Fetch: "method", Match: "meth", Values: []string{"CONNECT"}, Methods: []string{"CONNECT"}},
	"METH_DELETE":    {Fetch: "method", Match: "meth", Values: []string{"DELETE"}, Methods: []string{"DELETE"}},
	"METH_GET":       {Fetch: "method", Match: "meth", Values: []string{"GET", "HEAD"}, Methods: []string{"GET", "HEAD"}},
	"METH_HEAD":      {Fetch: "method", Match: "meth", Values: []string{"HEAD"}, Methods: []string{"HEAD"}},
	"METH_OPTIONS":   {Fetch: "method", Match: "meth", Values: []string{"OPTIONS"}, Methods: []string{"OPTIONS"}},
	"METH_POST":      {Fetch: "method", Match: "meth", Values: []string{"POST"}, Methods: []string{"POST"}},
	"METH_PUT":       {Fetch: "method", Match: "meth", Values: []string{"PUT"}, Methods: []string{"PUT"}},
	"METH_TRACE":     {Fetch: "method", Match: "meth", Values: []string{"TRACE"}, Methods: []string{"TRACE"}},
	"LOCALHOST":      {Fetch: "src", Match: "ip", Values: []string{"127.0.0.1/8", "::1"}, Nets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}},
	"HTTP_1.0":       {Fetch: "req.ver", Match: "str", Values: []string{"1.0"}},
	"HTTP_1.1":       {Fetch: "req.ver", Match: "str", Values: []string{"1.1"}},
	"HTTP_URL_ABS":   {Fetch: "url_reg", Match: "reg", Values: []string{"^[^/:]*://"}, Regexps: []*regexp.Regexp{regexp.MustCompile("^[^/:]*://")}},
	"HTTP_URL_SLASH": {Fetch: "url_beg", Match: "beg", Values: []string{"/"}},
	"HTTP_URL_STAR":  {Fetch: "url", Match: "str", Values: []string{"*"}},
}

func predefinedACL(name string) bool { _, ok := PredefinedACLs[name]; return ok }

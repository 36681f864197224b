package lbconfig

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Defaults filled in by Validate, haproxy 2.6's unless said otherwise.
const (
	// DefaultMaxConn is vipstack's MaxConn when neither defaults nor
	// global set maxconn. haproxy 2.6 derives its limit from the
	// open-file limit instead ((RLIMIT_NOFILE - reserve) / 2, 9986 with
	// 20000 files); vipstack keeps the model independent of the process
	// it is validated in and uses haproxy's historical default.
	DefaultMaxConn = 2000
	DefaultRetries = 3
	DefaultWeight  = 1
	MaxWeight      = 256
	DefaultInter   = 2 * time.Second
	DefaultFall    = 3
	DefaultRise    = 2
	DefaultBalance = RoundRobin
	// TCPBalances are the algorithms of a mode tcp backend, for messages.
	TCPBalances = "roundrobin, static-rr, leastconn, first, source, random"

	// `option httpchk` without arguments sends "OPTIONS / HTTP/1.0".
	DefaultCheckMethod  = "OPTIONS"
	DefaultCheckURI     = "/"
	DefaultCheckVersion = "HTTP/1.0"

	// DefaultStatsURI is the URI of `stats enable` without `stats uri`.
	DefaultStatsURI = "/haproxy?stats"
)

// Source keys. A section is keyed by its kind and name ("frontend main",
// "backend masters", "listen stats"; monitors and stats pages are both
// "listen"), or "global" / "defaults". Items inside a section add "/" and
// the item: "backend masters/server m0", "frontend main/bind 0" (the index
// in Binds), "listen stats/stats auth 1" (the index in Users), or the
// setting's keyword ("defaults/timeout connect", "backend masters/balance").

// FrontendKey, BackendKey and ListenKey are the Source keys of sections.
func FrontendKey(name string) string { return "frontend " + name }
func BackendKey(name string) string  { return "backend " + name }
func ListenKey(name string) string   { return "listen " + name }

// ItemKey is the Source key of an item or setting inside a section, e.g.
// ItemKey(BackendKey("masters"), "server m0").
func ItemKey(section, item string) string { return section + "/" + item }

// ServerKey is the Source key of a server.
func ServerKey(backend, server string) string {
	return ItemKey(BackendKey(backend), "server "+server)
}

// BindKey is the Source key of the i-th bind of a section.
func BindKey(section string, i int) string { return ItemKey(section, "bind "+strconv.Itoa(i)) }

// FieldError is one rejection by Validate.
type FieldError struct {
	Pos     string // "file:line" from Config.Source, "" when unknown
	Field   string // what it is about: "backend masters, server m0"
	Keyword string // the setting, as haproxy names it ("weight"); "" when none applies
	Msg     string // the bad value and what is accepted
}

// Error returns "pos: field: msg", leaving out what is empty.
func (e *FieldError) Error() string {
	var b strings.Builder
	if e.Pos != "" {
		b.WriteString(e.Pos + ": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// MaxErrors caps how many errors Validate (and the readers) report; the
// rest are counted in a last MoreErrors.
const MaxErrors = 20

// MoreErrors ends an error list cut at MaxErrors: how many were left out.
type MoreErrors int

func (n MoreErrors) Error() string { return fmt.Sprintf("... and %d more errors", int(n)) }

// Validate checks a Config from any source, fills defaults, and adds
// warnings to c.Warnings (once, so calling it again is harmless).
//
// Defaults: MaxConn is GlobalMaxConn when that is set, else
// DefaultMaxConn; Retries 3; Balance roundrobin; server Weight 1, Inter
// 2s, Fall 3, Rise 2; an HTTP check's URI "/" and version HTTP/1.0. For
// these settings zero means "default", so readers reject an explicit
// weight 0 or retries 0 (which haproxy accepts) rather than let it turn
// into 1 or 3. Zero timeouts mean "none". Verify is taken as given (false
// skips certificate checks); readers default it to true as haproxy does.
//
// It returns nil or the errors joined (at most MaxErrors), each a
// *FieldError naming the section, the bad value and what is accepted, with
// the position from c.Source when known.
func Validate(c *Config) error {
	v := &validator{c: c}
	v.run()
	for _, w := range v.warnings {
		if !slices.Contains(c.Warnings, w) {
			c.Warnings = append(c.Warnings, w)
		}
	}
	if len(v.errs) == 0 {
		return nil
	}
	out := make([]error, 0, len(v.errs)+1)
	for _, e := range v.errs {
		out = append(out, e)
	}
	if v.dropped > 0 {
		out = append(out, MoreErrors(v.dropped))
	}
	return errors.Join(out...)
}

type validator struct {
	c        *Config
	errs     []*FieldError
	dropped  int
	warnings []string
}

// pos returns the position of the first key found in c.Source.
func (v *validator) pos(keys ...string) string {
	for _, k := range keys {
		if p, ok := v.c.Source[k]; ok {
			return p
		}
	}
	return ""
}

func (v *validator) fail(pos, field, kw, format string, a ...any) {
	if len(v.errs) == MaxErrors {
		v.dropped++
		return
	}
	v.errs = append(v.errs, &FieldError{Pos: pos, Field: Printable(field), Keyword: kw, Msg: Printable(fmt.Sprintf(format, a...))})
}

func (v *validator) warn(pos, field, format string, a ...any) {
	w := Printable(fmt.Sprintf(format, a...))
	if field != "" {
		field = Printable(field)
		w = field + ": " + w
	}
	if pos != "" {
		w = pos + ": " + w
	}
	v.warnings = append(v.warnings, w)
}

func (v *validator) run() {
	c := v.c
	v.global()
	// haproxy starts with its runtime API alone (`stats socket`), and
	// so does vipstack; with nothing at all, haproxy -c says "will not
	// start (no listener)" and haproxy exits.
	if len(c.Frontends)+len(c.Monitors)+len(c.Stats)+len(c.StatsSockets) == 0 {
		v.fail("", "", "", "no frontend, monitor or stats section: nothing to listen on (accepted: at least one frontend, or a stats socket in global)")
	}

	// haproxy keeps frontends and backends in separate name spaces; a
	// listen section is both.
	front := map[string]string{} // name -> what defines it
	back := map[string]string{}
	claim := func(kind, name, pos string, spaces ...map[string]string) {
		what, field := kind+" "+name, kind+" "+name
		if name == "" {
			field = ""
		}
		if !validName(kind, name, func(msg string) { v.fail(pos, field, "", "%s", msg) }) {
			return
		}
		for _, ns := range spaces {
			if prev, dup := ns[name]; dup {
				v.fail(pos, what, "", "has the same name as %s (names must be unique)", prev)
				return
			}
		}
		for _, ns := range spaces {
			ns[name] = what
		}
	}
	backends := map[string]bool{}
	for _, b := range c.Backends {
		claim("backend", b.Name, v.pos(BackendKey(b.Name)), back)
		backends[b.Name] = true
	}
	for _, f := range c.Frontends {
		claim("frontend", f.Name, v.pos(FrontendKey(f.Name)), front)
	}
	for _, m := range c.Monitors {
		claim("listen", m.Name, v.pos(ListenKey(m.Name)), front, back)
	}
	for _, s := range c.Stats {
		claim("listen", s.Name, v.pos(ListenKey(s.Name)), front, back)
	}

	binds := map[Bind]string{}
	for i := range c.Frontends {
		v.frontend(&c.Frontends[i], backends, binds)
	}
	for i := range c.Backends {
		v.backend(&c.Backends[i])
	}
	for i := range c.Monitors {
		m := &c.Monitors[i]
		key := ListenKey(m.Name)
		v.binds(key, m.Binds, binds)
		v.httpPath(v.pos(ItemKey(key, "monitor-uri"), key), key, "monitor-uri", m.URI)
		v.logTargets(key, m.LogTargets)
		v.webMaxConn(key, m.MaxConn)
	}
	for i := range c.Stats {
		v.stats(&c.Stats[i], binds)
		v.webMaxConn(ListenKey(c.Stats[i].Name), c.Stats[i].MaxConn)
		v.logTargets(ListenKey(c.Stats[i].Name), c.Stats[i].LogTargets)
	}
	v.more()
}

func (v *validator) global() {
	c := v.c
	seen := map[string]bool{}
	for i := range c.StatsSockets {
		s := &c.StatsSockets[i]
		key := ItemKey("global", "stats socket "+strconv.Itoa(i))
		pos := v.pos(key)
		switch {
		case s.Network != "unix" && s.Network != "tcp":
			v.fail(pos, "global", "stats socket", "network %q (accepted: unix or tcp)", s.Network)
		case s.Address == "":
			v.fail(pos, "global", "stats socket", "no address (accepted: a file path, or IP:PORT)")
		case s.Network == "tcp":
			if _, err := netip.ParseAddrPort(s.Address); err != nil {
				v.fail(pos, "global", "stats socket", "address %q is not IP:PORT or [IPv6]:PORT", s.Address)
			}
		}
		if s.Level == "" {
			s.Level = "user"
		}
		if !slices.Contains(StatsSocketLevels, s.Level) {
			v.fail(pos, "global", "stats socket", "level %q (accepted: %s)", s.Level, strings.Join(StatsSocketLevels, ", "))
		}
		if s.Mode > 0o777 {
			v.fail(pos, "global", "stats socket", "mode %o (accepted: permission bits, 0 to 777 in octal)", s.Mode)
		}
		if s.Network == "tcp" && (s.Mode != 0 || s.User != "" || s.Group != "") {
			v.fail(pos, "global", "stats socket", "mode, user and group apply to a Unix socket, not to %s", s.Address)
		}
		if seen[s.Network+" "+s.Address] {
			v.fail(pos, "global", "stats socket", "%s is already a stats socket (accepted: each address once)", s.Address)
		}
		seen[s.Network+" "+s.Address] = true
	}
	if len(c.StatsSockets) > 0 {
		c.StatsSocket = true
	}
	if c.GlobalMaxConn < 0 {
		v.fail(v.pos(ItemKey("global", "maxconn")), "global", "maxconn",
			"maxconn %d is negative (accepted: 1 or more, or 0 for not set)", c.GlobalMaxConn)
	}
	switch {
	case c.MaxConn < 0:
		v.fail(v.pos(ItemKey("defaults", "maxconn")), "defaults", "maxconn",
			"maxconn %d is negative (accepted: 1 or more, or 0 for the default)", c.MaxConn)
	case c.MaxConn == 0 && c.GlobalMaxConn > 0:
		c.MaxConn = c.GlobalMaxConn
	case c.MaxConn == 0:
		c.MaxConn = DefaultMaxConn
	}
	switch {
	case c.Retries < 0:
		v.fail(v.pos(ItemKey("defaults", "retries")), "defaults", "retries",
			"retries %d is negative (accepted: 1 or more, or 0 for the default %d)", c.Retries, DefaultRetries)
	case c.Retries == 0:
		c.Retries = DefaultRetries
	}
	t := c.Timeouts
	for _, to := range []struct {
		name string
		d    time.Duration
	}{
		{"connect", t.Connect}, {"client", t.Client}, {"server", t.Server}, {"tunnel", t.Tunnel},
		{"queue", t.Queue}, {"http-request", t.HTTPRequest}, {"http-keep-alive", t.HTTPKeepAlive},
	} {
		if to.d < 0 {
			v.fail(v.pos(ItemKey("defaults", "timeout "+to.name)), "defaults", "timeout",
				"timeout %s %s is negative (accepted: a positive duration, or 0 for none)", to.name, to.d)
		}
	}
}

func (v *validator) frontend(f *Frontend, backends map[string]bool, binds map[Bind]string) {
	key := FrontendKey(f.Name)
	v.binds(key, f.Binds, binds)
	for i, b := range f.Binds {
		if b.Abstract != "" && (f.HTTP == nil || f.HTTP.TCPMode) {
			v.fail(v.pos(BindKey(key, i), key), key+", bind "+bindString(b), "bind",
				"abns@ in a mode tcp frontend is not supported by vipstack: its TCP relay accepts on IP addresses (accepted: abns@ binds in mode http frontends)")
		}
	}
	pos := v.pos(ItemKey(key, "default_backend"), key)
	switch {
	case f.Backend == "" && f.HTTP != nil:
		// An HTTP frontend answers 503 where no use_backend matches.
	case f.Backend == "":
		v.fail(pos, key, "default_backend", "has no default_backend (accepted: the name of a backend: %s)", v.backendNames())
	case !backends[f.Backend]:
		v.fail(pos, key, "default_backend", "default_backend %q is not a backend (accepted: %s)", f.Backend, v.backendNames())
	}
	if f.Log != nil {
		if _, err := ParseLogFormat(f.Log.Format); err != nil {
			v.fail(v.pos(ItemKey(key, "log-format"), key), key, "log-format", "%v", err)
		}
	}
	v.logTargets(key, f.LogTargets)
	v.httpFrontend(f, backends)
	v.tcpRequest(f) // tcprequest.go
}

func (v *validator) logTargets(key string, ts []LogTarget) {
	for _, t := range ts {
		if err := t.check(); err != nil {
			v.fail(v.pos(ItemKey(key, "log"), key), key, "log", "%v", err)
		}
	}
}

func (v *validator) backendNames() string {
	if len(v.c.Backends) == 0 {
		return "none defined"
	}
	names := make([]string, 0, len(v.c.Backends))
	for _, b := range v.c.Backends {
		names = append(names, b.Name)
	}
	return strings.Join(names, ", ")
}

// binds checks a section's binds, and that no address is bound twice.
func (v *validator) binds(section string, bs []Bind, seen map[Bind]string) {
	if len(bs) == 0 {
		v.fail(v.pos(section), section, "bind", "has no bind (accepted: at least one bind ADDRESS:PORT)")
	}
	for i, b := range bs {
		pos := v.pos(BindKey(section, i), section)
		field := section + ", bind " + bindString(b)
		if b.Abstract != "" {
			v.abstractBind(section, pos, field, b, seen)
			continue
		}
		switch {
		case !b.Addr.IsValid():
			v.fail(pos, section+", bind "+strconv.Itoa(i), "bind", "address is not set (accepted: IP:PORT)")
			continue
		case b.Addr.Port() == 0:
			v.fail(pos, field, "bind", "port 0 (accepted: 1..65535)")
			continue
		case b.Addr.Addr().Zone() != "":
			v.fail(pos, field, "bind", "IPv6 zones are not supported by vipstack (accepted: an address without %%zone)")
			continue
		}
		if b.Host != "" && b.Host != "localhost" {
			v.fail(pos, field, "bind", "host %q is not supported by vipstack (accepted: localhost, or an IP address)", b.Host)
		}
		if b.Host == "localhost" && b.Addr.Addr() != netip.AddrFrom4([4]byte{127, 0, 0, 1}) {
			v.fail(pos, field, "bind", "host localhost with the address %s (accepted: 127.0.0.1, which the readers give localhost)", b.Addr.Addr())
		}
		if a := b.Addr.Addr(); b.V4V6 && !(a.Is6() && a.IsUnspecified()) {
			v.warn(pos, field, "v4v6 applies to the IPv6 wildcard (:::PORT), which then takes IPv4 too; on %s it changes nothing", bindString(b))
		}
		if b.TLS != nil {
			if strings.HasPrefix(section, "frontend ") {
				v.bindTLS(pos, field, b.TLS)
			} else {
				v.fail(pos, field, "ssl", "ssl on a monitor or stats listener is not supported by vipstack (accepted: ssl on frontend binds)")
			}
		}
		k := Bind{Addr: b.Addr}
		if prev, dup := seen[k]; dup {
			v.fail(pos, field, "bind", "%s is also bound by %s (accepted: each address once)", b.Addr, prev)
			continue
		}
		seen[k] = section
	}
}

// abstractBind checks a bind on an abstract UNIX socket (abns@NAME).
func (v *validator) abstractBind(section string, pos, field string, b Bind, seen map[Bind]string) {
	if !strings.HasPrefix(section, "frontend ") {
		v.fail(pos, field, "bind", "abns@ on a monitor or stats listener is not supported by vipstack (accepted: abns@ binds in mode http frontends)")
		return
	}
	if msg := abstractName(b.Abstract); msg != "" {
		v.fail(pos, field, "bind", "%s", msg)
		return
	}
	k := Bind{Abstract: b.Abstract}
	if prev, dup := seen[k]; dup {
		v.fail(pos, field, "bind", "abns@%s is also bound by %s (accepted: each abstract socket once)", b.Abstract, prev)
		return
	}
	seen[k] = section
}

// abstractName checks the name of an abstract UNIX socket.
func abstractName(name string) string {
	if name == "" || len(name) > MaxAbstract || strings.IndexByte(name, 0) >= 0 {
		return fmt.Sprintf("abns@%s: the name is %d bytes (accepted: 1..%d bytes, no NUL)", name, len(name), MaxAbstract)
	}
	return ""
}

func bindString(b Bind) string {
	if b.Abstract != "" {
		return "abns@" + b.Abstract
	}
	if b.Host != "" {
		return b.Host + ":" + strconv.Itoa(int(b.Addr.Port()))
	}
	return b.Addr.String()
}

func (v *validator) backend(b *Backend) {
	key := BackendKey(b.Name)
	v.logTargets(key, b.LogTargets)
	switch b.Balance {
	case "":
		b.Balance = DefaultBalance
	case RoundRobin, LeastConn, Source, StaticRR, First, Random:
	case URI, Header:
		if b.HTTP == nil {
			v.fail(v.pos(ItemKey(key, "balance"), key), key, "balance",
				"balance %s needs mode http (accepted in mode tcp: %s)", string(b.Balance), TCPBalances)
		}
	default:
		v.fail(v.pos(ItemKey(key, "balance"), key), key, "balance",
			"balance %q is not supported by vipstack (accepted: %s)", string(b.Balance), TCPBalances)
	}
	v.httpCheck(key, &b.Check)
	v.httpBackend(b)
	if len(b.Servers) == 0 && b.HTTP == nil {
		// (A mode http one answers 503, as haproxy's does without a
		// word: a listen serving only use-service is one.)
		v.warn(v.pos(key), key, "has no server: its frontends close every connection")
	}
	names := map[string]bool{}
	for i := range b.Servers {
		v.server(b, &b.Servers[i], names)
	}
}

func (v *validator) httpCheck(key string, h *HTTPCheck) {
	pos := v.pos(ItemKey(key, "option httpchk"), key)
	const kw = "option httpchk"
	if h.Method == "" {
		if h.URI != "" || h.Version != "" {
			v.fail(pos, key, kw, "HTTP check with a URI or version but no method "+
				"(accepted: a method such as GET for HTTP checks, or no method, URI and version for TCP connect checks)")
		}
		v.httpCheckSend(key, pos, h)
		return
	}
	if !isToken(h.Method) {
		v.fail(pos, key, kw, "HTTP check method %q is not an HTTP method token (accepted: e.g. GET, HEAD, OPTIONS)", h.Method)
	}
	if h.URI == "" {
		h.URI = DefaultCheckURI
	}
	if strings.ContainsFunc(h.URI, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		v.fail(pos, key, kw, "HTTP check URI %q contains blanks or control characters (accepted: a request target such as /readyz)", h.URI)
	}
	switch h.Version {
	case "":
		h.Version = DefaultCheckVersion
	case "HTTP/1.0", "HTTP/1.1":
	default:
		v.fail(pos, key, kw, "HTTP check version %q is not supported by vipstack (accepted: HTTP/1.0, HTTP/1.1)", h.Version)
	}
	v.httpCheckSend(key, pos, h)
}

func (v *validator) server(b *Backend, s *Server, names map[string]bool) {
	key := ServerKey(b.Name, s.Name)
	pos := v.pos(key, BackendKey(b.Name))
	field := BackendKey(b.Name) + ", server " + s.Name
	if !validName("server", s.Name, func(msg string) { v.fail(pos, BackendKey(b.Name), "server", "%s", msg) }) {
		return
	}
	if names[s.Name] {
		v.fail(pos, field, "server", "is defined twice in the backend (accepted: unique server names)")
		return
	}
	names[s.Name] = true
	v.sendProxy(b, s, pos, field)
	switch {
	case s.Abstract != "":
		v.abstractServer(b, s, pos, field)
	case s.Unresolved && s.Addr.IsValid():
		// init-addr none: no address until its resolvers find one.
	case !s.Addr.IsValid():
		v.fail(pos, field, "server", "has no address (accepted: IP:PORT)")
	case s.Addr.Port() == 0 && !s.NoPort:
		v.fail(pos, field, "server", "address %s has port 0 (accepted: 1..65535)", s.Addr)
	case s.Addr.Addr().Zone() != "":
		v.fail(pos, field, "server", "IPv6 zones are not supported by vipstack (accepted: an address without %%zone)")
	}
	switch {
	case s.Weight == 0:
		s.Weight = DefaultWeight
	case s.Weight < 1 || s.Weight > MaxWeight:
		v.fail(pos, field, "weight", "weight %d is out of range (accepted: 1..%d)", s.Weight, MaxWeight)
	}
	switch {
	case s.Inter == 0:
		s.Inter = DefaultInter
	case s.Inter < time.Millisecond:
		v.fail(pos, field, "inter", "inter %s is below 1ms (accepted: 1ms or more)", s.Inter)
	}
	switch {
	case s.Fall == 0:
		s.Fall = DefaultFall
	case s.Fall < 0:
		v.fail(pos, field, "fall", "fall %d is negative (accepted: 1 or more)", s.Fall)
	}
	switch {
	case s.Rise == 0:
		s.Rise = DefaultRise
	case s.Rise < 0:
		v.fail(pos, field, "rise", "rise %d is negative (accepted: 1 or more)", s.Rise)
	}
	if s.CheckSSL && !s.Check {
		v.warn(pos, field, "check-ssl without check: the server is not health checked")
	}
	if s.SSL && b.HTTP == nil {
		v.fail(pos, field, "ssl", "ssl to a server of a mode tcp backend is not supported by vipstack (accepted: ssl on the servers of mode http backends)")
	}
	v.serverTLS(pos, field, s)
	if !s.Check && b.Check.Method != "" {
		v.warn(pos, field, "no check: backend %s's HTTP check is not run on this server, which is always up", b.Name)
	}
}

// abstractServer checks a server on an abstract UNIX socket (abns@NAME).
func (v *validator) abstractServer(b *Backend, s *Server, pos, field string) {
	switch {
	case abstractName(s.Abstract) != "":
		v.fail(pos, field, "server", "%s", abstractName(s.Abstract))
	case b.HTTP == nil:
		v.fail(pos, field, "server", "abns@ in a mode tcp backend is not supported by vipstack: its TCP relay connects to IP addresses (accepted: abns@ servers of mode http backends)")
	case s.Check:
		v.fail(pos, field, "check", "check on an abns@ server is not supported by vipstack: its health checks connect over TCP (accepted: an abns@ server without check)")
	}
}

func (v *validator) stats(s *Stats, binds map[Bind]string) {
	key := ListenKey(s.Name)
	v.binds(key, s.Binds, binds)
	v.httpPath(v.pos(ItemKey(key, "stats uri"), key), key, "stats uri", s.URI)
	if s.Refresh < 0 {
		v.fail(v.pos(ItemKey(key, "stats refresh"), key), key, "stats refresh",
			"stats refresh %s is negative (accepted: a positive duration, or 0 for none)", s.Refresh)
	}
	for i, u := range s.Users {
		pos := v.pos(ItemKey(key, "stats auth "+strconv.Itoa(i)), key)
		switch {
		case u.User == "":
			v.fail(pos, key, "stats auth", "stats auth %d has an empty user name (accepted: USER:PASSWORD)", i)
		case strings.ContainsAny(u.User, ":\r\n"):
			v.fail(pos, key, "stats auth", "stats auth user %q contains ':' or a line break (accepted: USER:PASSWORD, the user without ':')", u.User)
		}
	}
}

// httpPath checks a URI served by vipstack (monitor-uri, stats uri).
func (v *validator) httpPath(pos, key, kw, uri string) {
	switch {
	case uri == "":
		v.fail(pos, key, kw, "%s is not set (accepted: a path such as /healthz)", kw)
	case uri[0] != '/':
		v.fail(pos, key, kw, "%s %q does not start with / (accepted: a path such as /healthz)", kw, uri)
	case strings.ContainsFunc(uri, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		v.fail(pos, key, kw, "%s %q contains blanks or control characters (accepted: a path such as /healthz)", kw, uri)
	}
}

// validName checks a section or server name as haproxy does: letters,
// digits, '-', '_', '.' and ':' only.
func validName(kind, name string, fail func(string)) bool {
	if name == "" {
		fail(kind + " name is empty (accepted: letters, digits, '-', '_', '.', ':')")
		return false
	}
	for i, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:", r)) {
			what := fmt.Sprintf("character %q", r)
			if r == utf8.RuneError {
				what = fmt.Sprintf("byte %#x", name[i])
			}
			fail(fmt.Sprintf("%s is not permitted in %s name %q (accepted: letters, digits, '-', '_', '.', ':')", what, kind, name))
			return false
		}
	}
	return true
}

// isToken reports whether s is an HTTP token (RFC 9110 section 5.6.2).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// Printable escapes what would break a one-line message: control
// characters, other unprintable runes and invalid UTF-8 (names and values
// can hold any byte through haproxy's \xHH escapes).
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !unicode.IsPrint(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

package haproxycfg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// Load reads the haproxy.cfg at path and returns its validated model.
func Load(path string) (*lbconfig.Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load haproxy config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("load haproxy config %s: %w", path, err)
	}
	return ParseWith(path, data, Options{LookupHost: systemLookup, LookupEnv: SystemEnv})
}

// resolveTimeout bounds each host name's resolution at load.
const resolveTimeout = 5 * time.Second

// systemLookup resolves a server's host name with the system's resolver,
// as haproxy does at start (init-addr libc).
func systemLookup(host string) ([]netip.Addr, error) {
	return SystemLookup(host)
}

// SystemLookup resolves host with the system's resolver, within
// resolveTimeout.
func SystemLookup(host string) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// Options are ParseWith's.
type Options struct {
	// LookupHost resolves a server address's host name (the first address
	// it returns is used, as haproxy uses getaddrinfo's first); nil
	// rejects host names other than localhost.
	LookupHost func(host string) ([]netip.Addr, error)
	// LookupEnv returns the value of a variable that a double-quoted
	// "$NAME" or "${NAME}" names (SystemEnv: the process's environment,
	// as haproxy reads it); nil: no variable is set.
	LookupEnv func(name string) (value string, ok bool)
}

// Parse is ParseWith without a resolver.
func Parse(name string, data []byte) (*lbconfig.Config, error) {
	return ParseWith(name, data, Options{})
}

// ParseWith parses data as the haproxy.cfg named name and returns the
// model after lbconfig.Validate. On any error it returns a nil Config and
// the errors joined (at most lbconfig.MaxErrors), each an *Error naming
// the file and line. Validation runs only when the file parsed cleanly.
func ParseWith(name string, data []byte, opts Options) (*lbconfig.Config, error) {
	errs := &errList{}
	if len(data) > MaxFileSize {
		errs.add(name, 0, "", "file is larger than %d bytes (1 MiB)", MaxFileSize)
		return nil, errs.err()
	}
	p := &parser{
		file:  name,
		errs:  errs,
		cfg:   &lbconfig.Config{Source: map[string]string{}},
		front: map[string]nameUse{},
		back:  map[string]nameUse{},
		state: map[string]string{},
		opts:  opts,
	}
	p.defaultsServer = lbconfig.Server{Verify: true}
	for _, l := range splitLines(name, data, opts.LookupEnv, errs) {
		p.line(l)
	}
	p.endSection()
	p.endFile()
	if err := errs.err(); err != nil {
		return nil, err
	}
	if err := lbconfig.Validate(p.cfg); err != nil {
		errs.addValidation(name, err)
		return nil, errs.err()
	}
	return p.cfg, nil
}

type secKind int

const (
	secNone secKind = iota
	secGlobal
	secDefaults
	secFrontend
	secBackend
	secListen
	secSkip // an unsupported or broken section: its lines are not checked
	secResolvers
	secPeers
)

// Section keywords haproxy 2.6 knows, space separated. Any of them starts
// a new section. The lists are constants so the package keeps no mutable
// state.
const (
	supportedSections   = "global defaults frontend backend listen resolvers peers"
	unsupportedSections = "userlist mailers program http-errors ring cache fcgi-app " +
		"log-forward dynamic-update traces crt-store"
)

// inList reports whether w is a word of the space-separated list.
func inList(list, w string) bool { return slices.Contains(strings.Fields(list), w) }

// commas writes a space-separated list with commas.
func commas(list string) string { return strings.Join(strings.Fields(list), ", ") }

// Keywords each section accepts, for error messages.
const (
	globalKeywords   = "ca-base, chroot, crt-base, daemon, external-check, gid, group, hard-stop-after, insecure-fork-wanted, localpeer, log, log-send-hostname, log-tag, maxconn, nbthread, pidfile, server-state-base, server-state-file, spread-checks, ssl-default-bind-*, ssl-default-server-*, stats socket, stats timeout, tune.bufsize, tune.maxaccept, tune.maxrewrite, tune.ssl.default-dh-param, uid, ulimit-n, user"
	defaultsKeywords = "backlog, balance, compression, default-server, errorfile, fullconn, hash-type, log, log-format, log-tag, maxconn, mode, no log, option dontlognull, option forwardfor, option http-keep-alive, option http-server-close, option httpclose, option httpchk, option http-buffer-request, option httplog, option log-health-checks, option originalto, option redispatch, option tcplog, retries, timeout, " + moreProxyOptions + ", option allbackups"
	frontendKeywords = "backlog, bind, default_backend, id, log, log-format, log-tag, maxconn, mode, no log, option tcplog, timeout, " + moreProxyOptions
	listenKeywords   = "backlog, balance, bind, default-server, external-check command, external-check path, http-check connect, http-check expect status, http-check send, id, log, log-format, log-tag, mode, monitor-uri, no log, option dontlognull, option httpchk, option external-check, option log-health-checks, option mysql-check, option pgsql-check, option redis-check, option redispatch, option ssl-hello-chk, option tcp-check, option tcplog, server, server-template, stats auth, stats enable, stats hide-version, stats refresh, stats uri, tcp-check, " +
		"maxconn, retries, timeout, option allbackups, option httplog, stats admin, stats realm, stats show-desc, stats show-legends, stats show-node, " + moreProxyOptions
	backendKeywords = "balance, default-server, external-check command, external-check path, fullconn, http-check connect, http-check expect status, http-check send, id, log, log-tag, mode, no log, option external-check, option httpchk, option tcp-check, option tcplog, option log-health-checks, option mysql-check, option pgsql-check, option redis-check, option redispatch, option ssl-hello-chk, server, stick match|on|store-request, stick-table, tcp-check, retries, timeout, option allbackups, " + moreProxyOptions
	serverParams    = "alpn, backup, ca-file, check, check-ssl, ciphers, ciphersuites, cookie, disabled, downinter, enabled, fall, fastinter, force-tlsv1x, id, init-addr, inter, maxconn, maxqueue, no-ssl, no-sslv3, no-tls-tickets, no-tlsv1x, on-marked-down, port, resolve-prefer, resolvers, rise, send-proxy, send-proxy-v2, slowstart, sni, ssl, ssl-max-ver, ssl-min-ver, verify, weight"
	timeoutNames    = "check, client, client-fin, connect, http-keep-alive, http-request, queue, server, server-fin, tunnel"
)

// nameUse is where a proxy name was defined.
type nameUse struct {
	what string // "backend masters"
	line int
}

// parser turns statements into a Config, one section at a time.
type parser struct {
	file string
	errs *errList
	cfg  *lbconfig.Config
	opts Options
	cur  line // the line being read, for warnings deep in its parameters
	// extChecks are the sections with `option external-check` (extcheck.go)
	extChecks []nameLine
	peers     peersSection // stick.go

	kind    secKind
	key     string         // the section's Source key, also its name in messages
	secLine int            // line of the section keyword
	seen    map[string]int // keyword -> line, for settings given once per section

	defaultsLine int  // line of the defaults section, 0 if none yet
	proxySeen    bool // a frontend, backend or listen section was opened
	dontLogNull  bool // from defaults
	redispatch   bool // from defaults
	// logHealthChecks is defaults' option log-health-checks.
	logHealthChecks bool
	globalLogs      []lbconfig.LogTarget  // global's `log` lines
	defLogs         []lbconfig.LogTarget  // defaults' `log` lines, `log global` expanded
	logs            *[]lbconfig.LogTarget // the current section's: defLogs, the frontend's or the backend's
	// Which of global's lines each of the current section's targets
	// came from through `log global` (-1: its own line), and defaults'.
	// haproxy 2.6 adds a global line to a section once, however many
	// `log global` name it (measured: defaults' `log global` and a
	// listen's own send one datagram per message).
	refs, defRefs []int
	logFormat     string // defaults' log-format or option tcplog
	logFormatAt   int    // its line
	feLogFormat   string // the frontend's own, overriding logFormat

	front, back map[string]nameUse // haproxy's two proxy name spaces

	fe *lbconfig.Frontend
	be *lbconfig.Backend
	ls *listen

	broken bool // a line of the current section was rejected by the lexer

	defMode      string           // defaults' mode: "", tcp or http
	defBalance   lbconfig.Balance // defaults' balance, "" for none
	defHashType  string           // defaults' hash-type, "" for none
	defFullConn  int              // defaults' fullconn, 0 for none
	defModeLine  int
	httplogAt    int  // line of defaults' option httplog while it is the format in force
	httplogCLF   bool // defaults' option httplog is `option httplog clf`
	forwardforAt int  // line of defaults' option forwardfor

	defServer      lbconfig.Server    // the section's default-server parameters
	defaultsServer lbconfig.Server    // defaults' default-server parameters
	defCheck       lbconfig.HTTPCheck // defaults' option httpchk (httpcheck.go)
	defCheckLine   int                // its line, 0 if none

	tcpCheckAt  int // the backend's option tcp-check line
	tcpRulesAt  int // its first tcp-check rule
	httpRulesAt int // its first http-check rule

	hd     httpDefaults // defaults' HTTP settings (http.go)
	hs     *httpSection // the section's HTTP keywords (http.go)
	checks checkOpts    // the check options in order (checktype.go)
	more   moreState    // the keywords of more.go

	statsTimeout time.Duration // global's `stats timeout`, for every socket

	tlsg     tlsGlobal    // global's TLS settings (tls.go)
	bindOpts []pendingTLS // ssl binds, for global's defaults at the end
	srvTLS   *tlsOpts     // a server line's TLS version options being read

	ends []proxyEnd // the proxies read, for proxyWarnings (proxywarn.go)
	// state is global's server-state-file and server-state-base, and
	// stateLine the file's line (stateFile, global_more.go).
	state     map[string]string
	stateLine int
}

// listen is a listen section being read; what it becomes (a Monitor or a
// Stats page) is known only at its end.
type listen struct {
	name        string
	binds       []lbconfig.Bind
	mode        string
	modeLine    int
	monitorURI  string
	monitorLine int
	statsLine   int // first stats keyword, 0 if none
	stats       lbconfig.Stats
	logs        []lbconfig.LogTarget // defaults' `log` lines, then its own
	logFormat   string               // its own log-format or option tcplog
	formatLine  int
	forwardLine int // first line that makes it forward (server, balance, ...), 0 if none
	// serviceLines are its `http-request use-service` lines (rules of
	// p.hs.fe, or a stats page's exporter).
	serviceLines []line

	timeouts lbconfig.Timeouts // its own timeout lines (timeouts.go)
	maxconn  int               // its own maxconn, 0 if none
}

// listenBackendKeywords make a listen section forward, as a frontend and
// a backend of its name: the OpenShift UPI layout.
const listenBackendKeywords = "server|server-template|default-server|balance|option httpchk|option ssl-hello-chk|option tcp-check|tcp-check|http-check|option log-health-checks|option redispatch|option external-check|external-check|stick-table|stick|fullconn"

func (p *parser) errorf(l line, kw, format string, a ...any) {
	p.errs.add(p.file, l.num, kw, format, a...)
}

func (p *parser) warnf(l line, format string, a ...any) {
	p.cfg.Warnings = append(p.cfg.Warnings, p.file+":"+strconv.Itoa(l.num)+": "+lbconfig.Printable(fmt.Sprintf(format, a...)))
}

func (p *parser) at(l line) string { return p.file + ":" + strconv.Itoa(l.num) }

// source records where a key was read, keeping the first position.
func (p *parser) source(key string, l line) {
	if _, ok := p.cfg.Source[key]; !ok {
		p.cfg.Source[key] = p.at(l)
	}
}

// keyword returns how haproxy names the statement's keyword: one word, or
// two for the families "option", "timeout", "stats", and the "no" and
// "default" prefixes in front of them.
func keyword(words []string) string {
	if len(words) > 1 {
		switch words[0] {
		case "option", "timeout", "stats":
			return words[0] + " " + words[1]
		case "no", "default":
			return words[0] + " " + keyword(words[1:])
		}
	}
	return words[0]
}

// line handles one statement.
func (p *parser) line(l line) {
	p.cur = l
	if l.broken {
		// Reported by the lexer. What the line would have set is
		// unknown, so the section's end does not judge what it lacks.
		p.broken = true
		return
	}
	kw := l.kw()
	if strings.HasPrefix(kw, ".") {
		p.errorf(l, kw, "conditional blocks and directives (%s) are not supported by vipstack", kw)
		return
	}
	if inList(supportedSections, kw) || inList(unsupportedSections, kw) {
		p.endSection()
		p.section(l)
		return
	}
	if kw == "id" && (p.kind == secFrontend || p.kind == secBackend || p.kind == secListen) {
		p.proxyID(l) // ids.go
		return
	}
	switch p.kind {
	case secNone:
		p.errorf(l, kw, "keyword %q outside of any section (sections: %s)", keyword(l.words), commas(supportedSections))
	case secSkip:
	case secGlobal:
		p.global(l)
	case secDefaults:
		p.defaults(l)
	case secFrontend:
		p.frontend(l)
	case secBackend:
		p.backend(l)
	case secListen:
		p.listen(l)
	case secResolvers:
		p.resolversLine(l)
	case secPeers:
		p.peersLine(l) // stick.go
	}
}

// unsupported rejects a keyword the section does not accept.
func (p *parser) unsupported(l line, supported string) {
	kw := keyword(l.words)
	if p.removed(l, kw) { // removed.go
		return
	}
	what := "supported: " + supported
	if strings.HasPrefix(kw, "timeout ") && p.kind == secDefaults {
		what = "supported timeouts: " + timeoutNames
	}
	p.errorf(l, l.kw(), "keyword %q in %s is not supported by vipstack (%s)", kw, p.key, what)
}

// once records a setting and rejects it when the section already has it.
// haproxy keeps the last one; vipstack asks for one.
func (p *parser) once(l line, kw string) bool {
	if prev, ok := p.seen[kw]; ok {
		p.errorf(l, l.kw(), "%s is already set in %s at line %d (accepted: once per section)", kw, p.key, prev)
		return false
	}
	p.seen[kw] = l.num
	p.source(lbconfig.ItemKey(p.key, kw), l)
	return true
}

// nargs checks the number of values after a keyword of n words. The
// message quotes the values given, so that a time written with a space
// ("5 sec") or a stray word shows which words were taken as values.
func (p *parser) nargs(l line, n, lo, hi int, form string) ([]string, bool) {
	args := l.words[n:]
	if len(args) < lo || len(args) > hi {
		kw := strings.Join(l.words[:n], " ")
		got := strconv.Itoa(len(args))
		if len(args) > 0 {
			got += ": " + strconv.Quote(strings.Join(args, " "))
		}
		switch {
		case lo == hi && lo == 0:
			p.errorf(l, l.kw(), "%s takes no value, got %s", kw, got)
		case lo == hi:
			p.errorf(l, l.kw(), "%s takes %d value(s) (%s), got %s", kw, lo, form, got)
		default:
			p.errorf(l, l.kw(), "%s takes %d to %d values (%s), got %s", kw, lo, hi, form, got)
		}
		return nil, false
	}
	return args, true
}

// section opens the section that l starts.
func (p *parser) section(l line) {
	kw := l.kw()
	p.kind, p.secLine, p.seen, p.broken = secSkip, l.num, map[string]int{}, false
	p.more.own = p.more.defaults
	p.key = kw
	if kw == "resolvers" {
		p.openResolvers(l)
		return
	}
	if kw == "peers" {
		p.openPeers(l) // stick.go
		return
	}
	if inList(unsupportedSections, kw) {
		p.errorf(l, kw, "section %q is not supported by vipstack (supported: %s)", kw, commas(supportedSections))
		return
	}
	switch kw {
	case "global":
		if _, ok := p.nargs(l, 1, 0, 0, ""); ok {
			p.kind = secGlobal
			p.source("global", l)
		}
	case "defaults":
		if _, ok := p.nargs(l, 1, 0, 1, "an optional name"); !ok {
			return
		}
		switch {
		case p.proxySeen:
			p.errorf(l, kw, "defaults after a frontend, backend or listen section is not supported by vipstack (move it before them)")
		case p.defaultsLine != 0:
			p.errorf(l, kw, "a second defaults section is not supported by vipstack (the first is at line %d; merge them)", p.defaultsLine)
		default:
			p.kind, p.defaultsLine = secDefaults, l.num
			p.logs = &p.defLogs
			p.refs = nil
			p.source("defaults", l)
		}
	default: // frontend, backend, listen
		p.proxySeen = true
		args, ok := p.nargs(l, 1, 1, 1, "its name")
		if !ok {
			if len(l.words) > 2 && l.words[2] == "from" {
				p.errorf(l, kw, "%s ... from (named defaults) is not supported by vipstack", kw)
			}
			return
		}
		name := args[0]
		p.key = kw + " " + name
		use := nameUse{what: p.key, line: l.num}
		var spaces []map[string]nameUse
		switch kw {
		case "frontend":
			spaces = []map[string]nameUse{p.front}
		case "backend":
			spaces = []map[string]nameUse{p.back}
		default:
			spaces = []map[string]nameUse{p.front, p.back}
		}
		for _, ns := range spaces {
			if prev, dup := ns[name]; dup {
				p.errorf(l, kw, "%s has the same name as %s at line %d (accepted: unique names; "+
					"only a frontend and a backend may share one)", p.key, prev.what, prev.line)
				return
			}
		}
		for _, ns := range spaces {
			ns[name] = use
		}
		p.source(p.key, l)
		p.cfg.Proxies = append(p.cfg.Proxies, p.key)
		p.refs = slices.Clone(p.defRefs)
		p.hs = &httpSection{}
		switch kw {
		case "frontend":
			p.kind, p.fe, p.feLogFormat = secFrontend, &lbconfig.Frontend{Name: name}, ""
			p.fe.LogTargets = slices.Clone(p.defLogs)
			p.logs = &p.fe.LogTargets
		case "backend":
			p.defServer = p.defaultsServer
			p.tcpCheckAt, p.tcpRulesAt, p.httpRulesAt, p.checks = 0, 0, 0, checkOpts{}
			p.kind, p.be = secBackend, &lbconfig.Backend{Name: name, DontLogNull: p.dontLogNull, RedispatchOnRetry: p.redispatch, Balance: p.defBalance, HashType: p.defHashType, FullConn: p.defFullConn, LogHealthChecks: p.logHealthChecks}
			p.inheritHTTPCheck()
			p.be.LogTargets = slices.Clone(p.defLogs)
			p.logs = &p.be.LogTargets
		default:
			p.defServer = p.defaultsServer
			p.tcpCheckAt, p.tcpRulesAt, p.httpRulesAt, p.checks = 0, 0, 0, checkOpts{}
			p.kind, p.ls = secListen, &listen{name: name, logs: slices.Clone(p.defLogs), mode: p.defMode}
			p.logs = &p.ls.logs
		}
	}
}

// endSection stores the section being read.
func (p *parser) endSection() {
	switch p.kind {
	case secFrontend:
		// haproxy writes a connection log where the proxy has a log
		// target and a format (log-format or option tcplog); without
		// a format it sends "Connect from" at accept (doc.go).
		format := p.logFormat
		if p.feLogFormat != "" {
			format = p.feLogFormat
		}
		p.httpFrontendEnd(p.fe, p.hs.mode, p.feLogFormat != "")
		p.tcpRulesEnd(p.fe) // tcprequest.go
		if p.fe.HTTP != nil {
			p.fe.HTTP.LogFormat = format
			if p.feLogFormat != "" || p.fe.HTTP.HTTPLog {
				p.fe.HTTP.LogFormat = p.feLogFormat
			}
			if len(p.fe.LogTargets) == 0 {
				p.fe.HTTP.LogFormat = ""
			}
		} else if len(p.fe.LogTargets) > 0 && format != "" && p.tcpFormat(format, p.feLogFormat != "") {
			p.fe.Log = &lbconfig.ConnLog{Format: format, DontLogNull: p.dontLogNull}
		}
		p.inheritedHTTP("frontend", p.fe.Name, p.feLogFormat != "")
		p.noteProxy(proxyEnd{what: "frontend", name: p.fe.Name, fe: true, format: p.formatInForce(p.feLogFormat),
			logs: len(p.fe.LogTargets) > 0}, p.fe.Timeouts)
		p.endFrontendMore(p.fe, &p.more.own)
		p.cfg.Frontends = append(p.cfg.Frontends, *p.fe)
	case secBackend:
		p.httpBackendEnd(p.be, p.hs.mode)
		p.inheritedHTTP("backend", p.be.Name, false)
		p.endChecks()
		p.noteProxy(proxyEnd{what: "backend", name: p.be.Name, be: true, servers: len(p.be.Servers) > 0,
			http: p.be.HTTP != nil}, p.be.Timeouts)
		p.endBackendMore(p.be, &p.more.own)
		p.cfg.Backends = append(p.cfg.Backends, *p.be)
	case secListen:
		p.noteProxy(proxyEnd{what: "proxy", name: p.ls.name, fe: true, be: true, servers: p.be != nil && len(p.be.Servers) > 0,
			http: p.ls.mode == "http", format: p.formatInForce(p.ls.logFormat), logs: len(p.ls.logs) > 0}, p.ls.timeouts)
		p.endListen()
	case secDefaults:
		p.defRefs = p.refs
	case secResolvers:
		p.endResolvers()
	case secPeers:
		p.endPeers()
	}
	p.kind, p.fe, p.be, p.ls, p.logs = secNone, nil, nil, nil, nil
}

func (p *parser) endListen() {
	ls := p.ls
	l := line{num: p.secLine}
	monitor, stats := ls.monitorLine != 0, ls.statsLine != 0
	if len(ls.serviceLines) > 0 && !p.serviceListen(monitor, stats) {
		return
	}
	if ls.forwardLine != 0 {
		p.endForwardingListen(monitor || stats)
		return
	}
	if p.hs.first != 0 && p.hs.firstKw != "option httplog" {
		p.errorf(line{num: p.hs.first}, p.hs.firstKw, "%s in %s, a monitor or stats section, is not supported by vipstack "+
			"(accepted: %s in a frontend, or in a listen section with server lines)", p.hs.firstKw, p.key, p.hs.firstKw)
	}
	// Without a log format, haproxy 2.6 sends "Connect from ... (NAME/HTTP)"
	// for each request. With defaults' log-format (or option tcplog) it
	// logs no monitor hit, but writes a line in that format, at level info,
	// for every other stream (measured, haproxy 2.6.12, option tcplog):
	//
	//	127.0.0.1:35148 [...] mon mon/<NOSRV> -1/-1/0 0 CR 1/1/0/0/0 0/0      connected and closed (none with dontlognull)
	//	127.0.0.1:35160 [...] mon mon/<NOSRV> -1/-1/0 0 PR 1/1/0/0/0 0/0      garbage, answered 400
	//	127.0.0.1:35164 [...] mon mon/<NOSRV> -1/-1/0 217 SC 1/1/0/0/0 0/0    another URI, answered 503
	//	127.0.0.1:35182 [...] mon mon/<NOSRV> -1/-1/1001 0 cR 1/1/0/0/0 0/0   timeout http-request, 408 (none with dontlognull for a client that sent nothing)
	//	127.0.0.1:57788 [...] stats stats/<STATS> 0/0/0 22758 LR 1/1/0/0/0 0/0 the stats page
	//
	// vipstack does not write those lines: a listen section that would
	// send info lines under a log format is refused (logFormatRefusal);
	// one whose targets take notice and above (OpenShift's current
	// template: `log ... local0 notice alert`) gets none from haproxy
	// either, and sends nothing.
	for i := range ls.binds { // a monitor's or stats page's backlog
		if ls.binds[i].Sock.Backlog == 0 {
			ls.binds[i].Sock.Backlog = p.more.own.backlog
		}
	}
	logs, connLog := ls.logs, p.listenLog(ls)
	switch {
	case p.broken && (!monitor && !stats || ls.mode == ""):
		// A line the lexer rejected may have been the monitor-uri,
		// stats or mode that looks missing: its error is enough.
	case !monitor && !stats:
		p.errorf(l, "listen", "%s is neither a monitor (monitor-uri) nor a stats page (stats enable, stats uri, ...) "+
			"nor forwards (server lines): vipstack supports no other listen section", p.key)
	case ls.mode != "http":
		what := "monitor-uri"
		if stats {
			what = "stats"
		}
		if ls.modeLine != 0 {
			l.num = ls.modeLine
		}
		p.errorf(l, "mode", "%s needs mode http for its %s (haproxy ignores %s in TCP mode)", p.key, what, what)
	case monitor && !stats:
		p.cfg.Monitors = append(p.cfg.Monitors, lbconfig.Monitor{Name: ls.name, Binds: ls.binds, URI: ls.monitorURI, LogTargets: logs, Log: connLog, LogTag: p.more.own.logTag,
			ErrorFiles: maps.Clone(p.hd.errorFiles), MaxConn: ls.maxconn})
	default:
		s := ls.stats
		s.Name, s.Binds, s.LogTargets, s.Timeouts, s.Log = ls.name, ls.binds, logs, ls.timeouts, connLog
		s.MonitorURI = ls.monitorURI // both in one section: the monitor answers its URI
		s.MaxConn, s.LogTag = ls.maxconn, p.more.own.logTag
		s.ErrorFiles = maps.Clone(p.hd.errorFiles)
		if s.URI == "" {
			s.URI = lbconfig.DefaultStatsURI
		}
		p.cfg.Stats = append(p.cfg.Stats, s)
	}
}

// endFile applies what global says about the whole file.
func (p *parser) endFile() {
	p.checkResolvers()
	p.warnInsecureFork() // extcheck.go
	p.endStickPeers()    // stick.go
	p.endNodeDesc()      // global_more.go
	// haproxy: connect within min(timeout connect, inter), then
	// timeout check for the answer. vipstack bounds the whole check by
	// their sum.
	for i := range p.cfg.Backends {
		if t := p.cfg.Backends[i].Timeouts.Or(p.cfg.Timeouts); p.cfg.Backends[i].ExternalCheck != nil {
			// A program's run: haproxy's own bound (extcheck.go).
			for j := range p.cfg.Backends[i].Servers {
				s := &p.cfg.Backends[i].Servers[j]
				s.CheckTimeout = lbconfig.ExternalCheckTimeout(s.Inter, t)
			}
			continue
		}
		if t := p.cfg.Backends[i].Timeouts.Or(p.cfg.Timeouts); t.Check > 0 {
			for j := range p.cfg.Backends[i].Servers {
				s := &p.cfg.Backends[i].Servers[j]
				connect := s.Inter
				if connect == 0 {
					connect = lbconfig.DefaultInter
				}
				if t.Connect > 0 && t.Connect < connect {
					connect = t.Connect
				}
				s.CheckTimeout = connect + t.Check
			}
		}
	}
	for i := range p.cfg.StatsSockets {
		p.cfg.StatsSockets[i].IdleTimeout = p.statsTimeout
	}
	p.tcpFrontendsToHTTP()
	p.endTLS()
	p.stateFile()     // global_more.go
	p.proxyWarnings() // proxywarn.go
}

// oneArg reads the single value of a global setting given once.
func (p *parser) oneArg(l line, kw, form string) (string, bool) {
	if !p.once(l, kw) {
		return "", false
	}
	args, ok := p.nargs(l, len(strings.Fields(kw)), 1, 1, form)
	if !ok {
		return "", false
	}
	return args[0], true
}

// endForwardingListen stores a listen section with servers as a frontend
// and a backend of its name, as haproxy runs it: one proxy that accepts
// and forwards.
func (p *parser) endForwardingListen(webToo bool) {
	ls, be := p.ls, p.be
	l := line{num: p.secLine}
	switch {
	case webToo:
		p.errorf(l, "listen", "%s both forwards (line %d) and serves a monitor or stats page: vipstack serves them from separate listen sections", p.key, ls.forwardLine)
		return
	}
	fe := lbconfig.Frontend{Name: ls.name, Binds: ls.binds, Backend: ls.name, LogTargets: ls.logs, Timeouts: ls.timeouts, MaxConn: ls.maxconn}
	be.Timeouts = ls.timeouts
	if ls.mode == "http" {
		p.hs.mode = "http"
		p.httpFrontendEnd(&fe, "http", ls.logFormat != "")
		p.httpBackendEnd(be, "http")
		// One proxy in haproxy: the section's own compression and
		// originalto (read into the frontend's half) are the
		// backend's too, not defaults' alone.
		be.HTTP.Compression, be.HTTP.OriginalTo = fe.HTTP.Compression, fe.HTTP.OriginalTo
		if fe.HTTP.HTTPLog && ls.logFormat == "" {
			ls.logFormat = p.httplogFormat()
		}
	}
	if fe.HTTP == nil {
		p.tcpModeHTTP() // tcprequest.go
	}
	p.tcpRulesEnd(&fe)
	if fe.HTTP == nil && p.httplogAt != 0 && ls.logFormat == "" {
		p.warnf(line{num: p.httplogAt}, "'option httplog' not usable with proxy '%s' (needs 'mode http'). Falling back to 'option tcplog'.", ls.name)
	}
	if fe.HTTP == nil && p.forwardforAt != 0 {
		p.warnf(line{num: p.forwardforAt}, "'option forwardfor' ignored for proxy '%s' as it requires HTTP mode.", ls.name)
	}
	if fe.HTTP == nil {
		p.ownForwardForIgnored("proxy", ls.name, p.hs.fe.ForwardFor) // http.go
	}
	p.endChecks()
	format := p.logFormat
	if ls.logFormat != "" {
		format = ls.logFormat
	}
	switch {
	case fe.HTTP != nil && len(ls.logs) > 0:
		fe.HTTP.LogFormat = format
	case fe.HTTP == nil && len(ls.logs) > 0 && format != "" && p.tcpFormat(format, ls.logFormat != ""):
		fe.Log = &lbconfig.ConnLog{Format: format, DontLogNull: p.dontLogNull}
	}
	be.LogTargets = slices.Clone(ls.logs)
	// Positions for Validate's messages, under the frontend's and the
	// backend's keys.
	for k, v := range p.cfg.Source {
		if rest, ok := strings.CutPrefix(k, p.key); ok && (rest == "" || rest[0] == '/') {
			p.source(lbconfig.FrontendKey(ls.name)+rest, line{num: atoiLine(v)})
			if rest == "" {
				p.source(lbconfig.BackendKey(ls.name), line{num: atoiLine(v)})
			}
		}
	}
	if i := slices.Index(p.cfg.Proxies, p.key); i >= 0 {
		p.cfg.Proxies = slices.Replace(p.cfg.Proxies, i, i+1, lbconfig.FrontendKey(ls.name), lbconfig.BackendKey(ls.name))
	}
	if id, ok := p.cfg.ProxyIDs[p.key]; ok {
		// haproxy's one proxy is vipstack's two: both show its id.
		delete(p.cfg.ProxyIDs, p.key)
		p.cfg.ProxyIDs[lbconfig.FrontendKey(ls.name)] = id
		p.cfg.ProxyIDs[lbconfig.BackendKey(ls.name)] = id
	}
	p.endFrontendMore(&fe, &p.more.own)
	p.endBackendMore(be, &p.more.own)
	p.cfg.Frontends = append(p.cfg.Frontends, fe)
	p.cfg.Backends = append(p.cfg.Backends, *be)
}

// atoiLine returns the line of a "file:line" position.
func atoiLine(pos string) int {
	n, _ := strconv.Atoi(pos[strings.LastIndex(pos, ":")+1:])
	return n
}

func (p *parser) global(l line) {
	kw := keyword(l.words)
	if p.globalTLS(l, kw) { // tls.go
		return
	}
	switch kw {
	case "daemon":
		if _, ok := p.nargs(l, 1, 0, 0, ""); ok {
			p.warnf(l, "daemon: vipstack lb stays in the foreground, as haproxy does in master-worker mode under a supervisor (-Ws); "+
				"run it from systemd or another supervisor")
		}
	case "user", "uid", "group", "gid":
		isUser := kw == "user" || kw == "uid"
		key := "group"
		if isUser {
			key = "user"
		}
		v, ok := p.oneArg(l, key, "a name or number")
		if !ok {
			return
		}
		if (kw == "uid" || kw == "gid") && !isDigits(v) {
			p.errorf(l, kw, "%s %q is not a number (accepted: a numeric id; user and group take names)", kw, v)
			return
		}
		if isUser {
			p.cfg.User = v
		} else {
			p.cfg.Group = v
		}
	case "chroot":
		if v, ok := p.oneArg(l, kw, "a directory"); ok {
			if !strings.HasPrefix(v, "/") {
				p.errorf(l, kw, "chroot %q is not an absolute path (accepted: a directory such as /var/lib/haproxy)", v)
				return
			}
			p.cfg.Chroot = v
		}
	case "pidfile":
		if v, ok := p.oneArg(l, kw, "a file path"); ok {
			p.cfg.PIDFile = v
		}
	case "nbthread":
		if v, ok := p.oneArg(l, kw, "a number of threads"); ok {
			n, ok := p.intArg(l, kw, v, 1, "1 or more")
			if ok && n == 0 {
				p.errorf(l, kw, "nbthread 0 is out of range (accepted: 1 or more)")
				return
			}
			p.cfg.NbThread = n
		}
	case "stats timeout":
		if v, ok := p.oneArg(l, kw, "a time such as 30s"); ok {
			if d, ok := p.timeArg(l, kw, v, msUnit); ok {
				if d == 0 {
					p.errorf(l, kw, "stats timeout 0 is out of range (accepted: 1ms or more)")
					return
				}
				p.statsTimeout = d
			}
		}
	case "maxconn":
		if !p.once(l, "maxconn") {
			return
		}
		if args, ok := p.nargs(l, 1, 1, 1, "a number of connections"); ok {
			p.cfg.GlobalMaxConn, _ = p.intArg(l, "maxconn", args[0], 0, "0..2147483647")
		}
	case "stats socket":
		if args, ok := p.nargs(l, 2, 1, 64, "ADDRESS [params]"); ok {
			p.statsSocket(l, args)
		}
	case "log":
		if len(l.words) == 2 && l.words[1] == "global" {
			p.errorf(l, "log", "log global in global refers to itself (accepted in global: log TARGET [format raw|rfc3164] FACILITY [LEVEL [MINLEVEL]])")
			return
		}
		p.logs = &p.globalLogs
		p.log(l)
		p.logs = nil
	case "log-tag":
		if !p.once(l, "log-tag") {
			return
		}
		if args, ok := p.nargs(l, 1, 1, 1, "a tag"); ok {
			p.cfg.LogTag = args[0]
		}
	default:
		if !p.moreGlobal(l, kw) && !p.tune(l, kw) {
			p.unsupported(l, globalKeywords)
		}
	}
}

// socketParams are the `stats socket` parameters vipstack takes.
const socketParams = "expose-fd listeners, gid, group, level, mode, uid, user"

// statsSocket reads `stats socket ADDRESS [param value]...`. ADDRESS is a
// file path (unix@ optional) or ipv4@/ipv6@ IP:PORT (or IP:PORT alone).
func (p *parser) statsSocket(l line, args []string) {
	s := lbconfig.StatsSocket{Network: "unix", Address: args[0]}
	addr := args[0]
	switch prefix, rest, ok := strings.Cut(addr, "@"); {
	case ok && prefix == "unix":
		s.Address = rest
	case ok && (prefix == "ipv4" || prefix == "ipv6"):
		s.Network, s.Address = "tcp", rest
	case ok && !strings.Contains(prefix, "/"):
		p.errorf(l, "stats socket", "stats socket: address %q: the %s@ family is not supported by vipstack (accepted: a file path, unix@PATH, ipv4@IP:PORT, ipv6@[IP]:PORT)", addr, prefix)
		return
	case !strings.HasPrefix(addr, "/") && strings.Contains(addr, ":"):
		s.Network = "tcp"
	}
	if s.Network == "tcp" {
		// "*:PORT" and ":PORT" are every IPv4 address, as in haproxy.
		if h, port, ok := strings.Cut(s.Address, ":"); ok && (h == "*" || h == "") {
			s.Address = "0.0.0.0:" + port
		}
		ap, err := netip.ParseAddrPort(s.Address)
		if err != nil {
			p.errorf(l, "stats socket", "stats socket: address %q is not IP:PORT or [IPv6]:PORT (accepted: a file path, unix@PATH, ipv4@IP:PORT, ipv6@[IP]:PORT)", addr)
			return
		}
		s.Address = ap.String()
	}
	params := args[1:]
	for i := 0; i < len(params); i++ {
		name := params[i]
		if i+1 >= len(params) {
			p.errorf(l, "stats socket", "stats socket: parameter %q needs a value (accepted: %s)", name, socketParams)
			return
		}
		val := params[i+1]
		i++
		switch name {
		case "mode":
			m, err := strconv.ParseUint(val, 8, 32)
			if err != nil || m > 0o777 {
				p.errorf(l, "stats socket", "stats socket: mode %q is not octal permission bits such as 600", val)
				return
			}
			s.Mode = uint32(m)
		case "level":
			if !slices.Contains(lbconfig.StatsSocketLevels, val) {
				p.errorf(l, "stats socket", "stats socket: level %q (accepted: %s)", val, strings.Join(lbconfig.StatsSocketLevels, ", "))
				return
			}
			s.Level = val
		case "user", "group", "uid", "gid":
			if (name == "uid" || name == "gid") && !isDigits(val) {
				p.errorf(l, "stats socket", "stats socket: %s %q is not a number (accepted: a numeric id; user and group take names)", name, val)
				return
			}
			if name == "user" || name == "uid" {
				s.User = val
			} else {
				s.Group = val
			}
		case "expose-fd":
			if val != "listeners" {
				p.errorf(l, "stats socket", "stats socket: expose-fd %q (accepted: listeners)", val)
				return
			}
			// haproxy hands its listening sockets to the next process
			// on reload; vipstack reloads in its own process and keeps
			// them, so there is nothing to hand over.
		default:
			p.errorf(l, "stats socket", "stats socket: parameter %q is not supported by vipstack (accepted: %s)", name, socketParams)
			return
		}
	}
	p.source(lbconfig.ItemKey("global", "stats socket "+strconv.Itoa(len(p.cfg.StatsSockets))), l)
	p.cfg.StatsSockets = append(p.cfg.StatsSockets, s)
	p.cfg.StatsSocket = true
}

// isDigits reports whether s is a non-empty run of decimal digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func (p *parser) defaults(l line) {
	if p.httpDefaultsLine(l) {
		return
	}
	kw := keyword(l.words)
	switch kw {
	case "maxconn":
		if !p.once(l, kw) {
			return
		}
		if args, ok := p.nargs(l, 1, 1, 1, "a number of connections"); ok {
			p.cfg.MaxConn, _ = p.intArg(l, kw, args[0], 0, "0..2147483647; 0 means the global maxconn")
		}
	case "mode":
		p.defaultsMode(l)
	case "log", "no log":
		p.log(l)
	case "log-format", "option tcplog":
		p.logFormatLine(l, &p.logFormat)
		p.logFormatAt, p.httplogAt = l.num, 0
	case "option httplog":
		// For a TCP proxy, haproxy falls back to option tcplog with a
		// warning (endSection); a monitor or stats section in mode http
		// would log its requests, which endListen judges.
		if clf, ok := p.httplogArgs(l); ok && p.once(l, kw) {
			p.logFormat, p.logFormatAt, p.httplogAt = lbconfig.TCPLogFormat, l.num, l.num
			p.httplogCLF = clf
		}
	case "default-server":
		p.defaultServer(l)
	case "balance":
		// Every backend and forwarding listen after it starts from
		// it, as in haproxy; in defaults vipstack takes the TCP
		// algorithms.
		if !p.once(l, kw) {
			return
		}
		if args, ok := p.nargs(l, 1, 1, 1, lbconfig.TCPBalances); ok {
			b, ok := p.randomDraws(l, args[0])
			if !ok {
				return
			}
			switch b {
			case lbconfig.RoundRobin, lbconfig.LeastConn, lbconfig.Source, lbconfig.StaticRR, lbconfig.First, lbconfig.Random:
				p.defBalance = b
			default:
				p.errorf(l, kw, "balance %q in defaults is not supported by vipstack (accepted in defaults: %s)", args[0], lbconfig.TCPBalances)
			}
		}
	case "option dontlognull":
		if p.once(l, kw) {
			if _, ok := p.nargs(l, 2, 0, 0, ""); ok {
				p.dontLogNull = true
			}
		}
	case "option redispatch":
		if p.once(l, kw) {
			if _, ok := p.nargs(l, 2, 0, 0, ""); ok {
				p.redispatch = true
			}
		}
	case "option log-health-checks":
		// Every backend and listen after it logs its checks.
		if p.once(l, kw) {
			if _, ok := p.nargs(l, 2, 0, 0, ""); ok {
				p.logHealthChecks = true
			}
		}
	case "retries":
		if !p.once(l, kw) {
			return
		}
		args, ok := p.nargs(l, 1, 1, 1, "a number of retries")
		if !ok {
			return
		}
		n, ok := p.intArg(l, kw, args[0], 0, "1 or more")
		if !ok {
			return
		}
		if n == 0 {
			p.errorf(l, kw, "retries 0 is not supported by vipstack (accepted: 1 or more, default %d): "+
				"vipstack retries a failed connect on another server", lbconfig.DefaultRetries)
			return
		}
		p.cfg.Retries = n
	case "timeout":
		p.errorf(l, kw, "timeout takes a name and a time (accepted timeouts: %s)", timeoutNames)
	default:
		if strings.HasPrefix(kw, "timeout ") {
			p.timeout(l)
			return
		}
		if !p.moreDefaults(l, kw) && !p.defaultsHTTPCheck(l, kw) {
			p.unsupported(l, defaultsKeywords)
		}
	}
}

// defaultsMode reads defaults' mode: tcp or http. Under mode http, each
// frontend and backend must say mode tcp (endSection).
func (p *parser) defaultsMode(l line) {
	if !p.once(l, "mode") {
		return
	}
	args, ok := p.nargs(l, 1, 1, 1, "tcp or http")
	if !ok {
		return
	}
	switch args[0] {
	case "tcp", "http":
		p.defMode, p.defModeLine = args[0], l.num
	default:
		p.errorf(l, "mode", "mode %q is not a haproxy mode (accepted: tcp, http)", args[0])
	}
}

// errorfileCodes are the status codes haproxy 2.6 takes an errorfile for.
const errorfileCodes = "200 400 401 403 404 405 407 408 410 413 425 429 500 501 502 503 504"

// inheritedHTTP checks the mode a frontend or backend gets from defaults
// and warns, in haproxy's words, about defaults' HTTP options it ignores.
func (p *parser) inheritedHTTP(what, name string, ownFormat bool) {
	if mode := p.hs.mode; mode == "http" || mode == "" && p.defMode == "http" {
		return // an HTTP proxy: it uses them (http.go)
	}
	if p.httplogAt != 0 && what != "backend" && !ownFormat {
		p.warnf(line{num: p.httplogAt}, "'option httplog' not usable with %s '%s' (needs 'mode http'). Falling back to 'option tcplog'.", what, name)
	}
	if p.forwardforAt != 0 {
		p.warnf(line{num: p.forwardforAt}, "'option forwardfor' ignored for %s '%s' as it requires HTTP mode.", what, name)
	}
}

func (p *parser) timeout(l line) {
	p.timeoutInto(l, &p.cfg.Timeouts, "")
}

// log reads `log TARGET [format raw|rfc3164] FACILITY [LEVEL [MINLEVEL]]`,
// `log global` (global's targets) and `no log` (none of those inherited
// from defaults) into the current section's targets. As in haproxy 2.6
// (measured), a section's own lines add to those of defaults, each of
// global's lines once: `log global` in a section whose defaults said it
// already adds nothing, while an explicit line naming the same target as
// global's adds a second one (two datagrams per message).
func (p *parser) log(l line) {
	args := l.words[1:]
	if l.words[0] == "no" {
		if _, ok := p.nargs(l, 2, 0, 0, ""); ok {
			*p.logs, p.refs = nil, nil
		}
		return
	}
	if len(args) == 1 && args[0] == "global" {
		if len(p.globalLogs) == 0 {
			p.warnf(l, "log global: global has no log line (above this one): nothing is sent")
		}
		for i, t := range p.globalLogs {
			if !slices.Contains(p.refs, i) {
				*p.logs = append(*p.logs, t)
				p.refs = append(p.refs, i)
			}
		}
		return
	}
	if len(args) > 0 {
		addr, ok := p.logHost(l, args[0])
		if !ok {
			return
		}
		args = append([]string{addr}, args[1:]...)
	}
	t, err := lbconfig.ParseLogTarget(args)
	if err != nil {
		p.errorf(l, "log", "%v", err)
		return
	}
	*p.logs = append(*p.logs, t)
	p.refs = append(p.refs, -1)
}

func (p *parser) frontend(l line) {
	switch kw := keyword(l.words); kw {
	case "bind":
		p.fe.Binds = append(p.fe.Binds, p.bind(l, len(p.fe.Binds))...)
	case "default_backend":
		if !p.once(l, kw) {
			return
		}
		if args, ok := p.nargs(l, 1, 1, 1, "a backend name"); ok {
			p.fe.Backend = args[0]
		}
	case "mode":
		p.httpMode(l)
	case "log", "no log":
		p.log(l)
	case "log-format", "option tcplog":
		p.logFormatLine(l, &p.feLogFormat)
	default:
		if !p.httpLine(l) && !p.moreFrontend(l, kw) {
			p.unsupported(l, withHTTP(frontendKeywords, httpFrontendKeywords))
		}
	}
}

// logFormatLine reads `log-format FORMAT` or `option tcplog` (haproxy's
// TCP format) into dst; the later of the two in a section wins, as in
// haproxy (which warns).
// tcpFormat checks a TCP section's log format: one inherited from
// defaults with an HTTP variable is haproxy's error, at defaults' line.
func (p *parser) tcpFormat(format string, own bool) bool {
	if own {
		return true
	}
	if v := lbconfig.HTTPOnlyVariable(format); v != "" {
		p.errorf(line{num: p.logFormatAt}, "log-format", "failed to parse log-format : format variable '%s' is reserved for HTTP mode. (accepted in a mode tcp section: %s)", v, strings.Join(lbconfig.LogVariables, " "))
		return false
	}
	return true
}

func (p *parser) logFormatLine(l line, dst *string) {
	kw := keyword(l.words)
	if kw == "option tcplog" {
		if _, ok := p.nargs(l, 2, 0, 0, ""); ok && p.once(l, kw) {
			*dst = lbconfig.TCPLogFormat
		}
		return
	}
	args, ok := p.nargs(l, 1, 1, 1, "a format, quoted when it has spaces")
	if !ok || !p.once(l, kw) {
		return
	}
	parse := lbconfig.ParseLogFormat
	if p.httpFormat() || p.kind == secDefaults {
		// Defaults' format may serve HTTP sections; a TCP one that
		// inherits it is checked at its end (tcpFormat).
		parse = lbconfig.ParseHTTPLogFormat // http.go
	}
	if _, err := parse(args[0]); err != nil {
		p.errorf(l, kw, "%v", err)
		return
	}
	*dst = args[0]
}

func (p *parser) listen(l line) {
	ls := p.ls
	kw := keyword(l.words)
	if kw == "http-request" && len(l.words) > 1 && l.words[1] == "use-service" {
		// An http-request rule of the section (in its place among the
		// others), or, in a stats listen, its page's exporter: which
		// one is known at the section's end (endListen).
		n := len(p.hs.fe.Rules)
		if p.hs.reqLine == 0 {
			p.hs.reqLine = l.num
		}
		p.httpRequest(l, &p.hs.fe.HTTPProxy)
		if len(p.hs.fe.Rules) > n {
			ls.serviceLines = append(ls.serviceLines, l)
		}
		return
	}
	if slices.Contains(strings.Split(listenBackendKeywords, "|"), kw) {
		if ls.forwardLine == 0 {
			p.listenForwards(l)
		}
		p.backend(l)
		return
	}
	if strings.HasPrefix(kw, "stats ") && ls.statsLine == 0 {
		ls.statsLine = l.num
	}
	switch kw {
	case "bind":
		ls.binds = append(ls.binds, p.bind(l, len(ls.binds))...)
	case "mode":
		if !p.once(l, kw) {
			return
		}
		if args, ok := p.nargs(l, 1, 1, 1, "http"); ok {
			if args[0] != "http" && args[0] != "tcp" {
				p.errorf(l, kw, "mode %q is not a haproxy mode (accepted: http)", args[0])
				return
			}
			ls.mode, ls.modeLine = args[0], l.num
		}
	case "monitor-uri":
		if !p.once(l, kw) {
			return
		}
		if args, ok := p.nargs(l, 1, 1, 1, "a URI"); ok {
			ls.monitorURI, ls.monitorLine = args[0], l.num
		}
	case "log", "no log":
		p.log(l)
	case "option dontlognull":
		if p.once(l, kw) {
			p.nargs(l, 2, 0, 0, "")
		}
	case "log-format", "option tcplog":
		// A forwarding listen's connection log; refused in monitor and
		// stats sections at the section's end.
		p.logFormatLine(l, &ls.logFormat)
		if ls.formatLine == 0 {
			ls.formatLine = l.num
		}
	case "option httplog":
		// A forwarding listen in mode http logs its requests
		// (http.go); a monitor or stats section its request lines
		// (listenLog).
		if clf, ok := p.httplogArgs(l); ok && p.once(l, kw) {
			p.hs.httplog, p.hs.httplogLine, p.hs.httplogCLF = true, l.num, clf
		}
	case "stats enable":
		if p.once(l, kw) {
			p.nargs(l, 2, 0, 0, "")
		}
	case "stats hide-version":
		if p.once(l, kw) {
			if _, ok := p.nargs(l, 2, 0, 0, ""); ok {
				ls.stats.HideVersion = true
			}
		}
	case "stats uri":
		if !p.once(l, kw) {
			return
		}
		if args, ok := p.nargs(l, 2, 1, 1, "a URI prefix"); ok {
			ls.stats.URI = args[0]
		}
	case "stats refresh":
		if !p.once(l, kw) {
			return
		}
		if args, ok := p.nargs(l, 2, 1, 1, "a delay, in seconds without a unit"); ok {
			ls.stats.Refresh, _ = p.timeArg(l, kw, args[0], sUnit)
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
		p.source(lbconfig.ItemKey(p.key, "stats auth "+strconv.Itoa(len(ls.stats.Users))), l)
		ls.stats.Users = append(ls.stats.Users, lbconfig.UserPass{User: user, Pass: pass})
	default:
		if !p.httpLine(l) && !p.moreListen(l, kw) {
			p.unsupported(l, withHTTP(listenKeywords, httpFrontendKeywords+", "+httpBackendKeywords))
		}
	}
}

func (p *parser) backend(l line) {
	switch kw := keyword(l.words); kw {
	case "server":
		p.server(l)
	case "server-template":
		p.serverTemplate(l) // servertemplate.go
	case "default-server":
		p.defaultServer(l)
	case "balance":
		if !p.once(l, kw) {
			return
		}
		if args, ok := p.nargs(l, 1, 1, 1, lbconfig.TCPBalances); ok {
			if b, ok := p.randomDraws(l, args[0]); ok {
				p.be.Balance = b
			}
		}
	case "mode":
		p.httpMode(l)
	case "log", "no log":
		p.log(l)
	case "option httpchk":
		if !p.once(l, kw) {
			return
		}
		c, ok := p.httpchkOption(l)
		if !ok {
			return
		}
		c.ExpectStatus = p.be.Check.ExpectStatus
		p.be.Check = c
		p.checks.option("httpchk", l.num)
	case "option tcp-check":
		if _, ok := p.nargs(l, 2, 0, 0, ""); ok && p.once(l, kw) {
			p.tcpCheckAt = l.num
			p.checks.option("tcp-check", l.num)
		}
	case "option tcplog":
		// Backends write no connection log: haproxy warns and goes on.
		if _, ok := p.nargs(l, 2, 0, 0, ""); ok && p.kind == secBackend {
			p.warnf(l, "backend '%s' : 'option tcplog' directive is ignored in backends.", p.be.Name)
		}
	case "option ssl-hello-chk":
		if _, ok := p.nargs(l, 2, 0, 0, ""); ok && p.once(l, kw) {
			p.be.SSLHelloCheck = true
			p.checks.option("ssl-hello-chk", l.num)
		}
	case "tcp-check":
		p.tcpCheck(l)
	case "http-check":
		p.httpCheck(l)
	case "option log-health-checks":
		if p.once(l, kw) {
			if _, ok := p.nargs(l, 2, 0, 0, ""); ok {
				p.be.LogHealthChecks = true
			}
		}
	case "option redispatch":
		if p.once(l, kw) {
			if _, ok := p.nargs(l, 2, 0, 0, ""); ok {
				p.be.RedispatchOnRetry = true
			}
		}
	default:
		if !p.httpLine(l) && !p.moreBackend(l, kw) {
			p.unsupported(l, withHTTP(backendKeywords, httpBackendKeywords))
		}
	}
}

// server parses `server NAME ADDRESS:PORT [params]`.
//
// Every error about a named server starts "backend B, server S: ", as
// lbconfig.Validate's do, so that a message says which server it is about
// whichever stage found it. Only the first error of a line is reported:
// after a parameter it does not know or a value it cannot read, the
// parser can no longer tell values from parameters, and what it would say
// about the next words (`parameter "10" is not supported` after an
// unsupported `maxconn 10`) would be false.
func (p *parser) server(l line) {
	if len(l.words) < 3 {
		p.errorf(l, "server", "server needs a name and an address (accepted: server NAME ADDRESS:PORT [%s])", serverParams)
		return
	}
	name := l.words[1]
	for _, s := range p.be.Servers {
		if s.Name == name {
			p.errorf(l, "server", "server %s is already defined in %s at %s (accepted: unique server names)",
				name, p.key, p.cfg.Source[lbconfig.ServerKey(p.be.Name, name)])
			return
		}
	}
	field := p.key + ", server " + name
	fail := func(kw, format string, a ...any) {
		p.errorf(l, kw, "%s: "+format, append([]any{field}, a...)...)
	}
	s := p.defServer
	s.Name = name
	text := l.words[2]
	var host string
	if abs, ok, msg := abstractAddr(text); ok {
		if msg != "" {
			fail("server", "%s", msg)
			return
		}
		s.Abstract = abs
	} else if host, ok = p.serverAddr(text, &s, fail); !ok {
		return
	}
	seen := map[string]bool{}
	if !p.serverParams(l.words[3:], &s, seen, fail) || !p.serverIDs(l, &s) {
		return
	}
	if host != "" && !p.initAddr(l, &s, host, fail) {
		return
	}
	if seen["verify"] && !s.CheckSSL && !s.SSL {
		p.warnf(l, "%s: verify applies to TLS (ssl, check-ssl), which this server does not have: it changes nothing here", field)
	}
	if s.Check && s.CheckSSL && !s.SSL && s.Verify && (s.TLS == nil || len(s.TLS.CA) == 0) {
		p.warnf(l, "%s: its health checks verify the server certificate against the system's CA pool "+
			"(haproxy 2.6 needs a ca-file for this; give one with ca-file, or write verify none to skip verification)", field)
	}
	p.source(lbconfig.ServerKey(p.be.Name, name), l)
	p.be.Servers = append(p.be.Servers, s)
	if p.hs != nil && p.hs.cookie != "" {
		if p.hs.be.ServerCookies == nil {
			p.hs.be.ServerCookies = map[string]string{}
		}
		p.hs.be.ServerCookies[name], p.hs.cookie = p.hs.cookie, ""
	}
}

// serverAddr reads a server's IP address or host name and port into s;
// it returns the host name to resolve once the parameters are read.
func (p *parser) serverAddr(text string, s *lbconfig.Server, fail func(kw, format string, a ...any)) (string, bool) {
	// An address without a port (server_params.go): the port the
	// client connected to.
	text, s.NoPort = withoutPort(text)
	// A host name is resolved once the parameters are read (init-addr
	// says how: resolvers.go); 0.0.0.0 stands in for it meanwhile.
	var host string
	if i := strings.LastIndexByte(text, ':'); i > 0 && p.opts.LookupHost != nil && !strings.HasPrefix(text, "[") {
		if h := text[:i]; h != "localhost" && h != "*" && !strings.Contains(h, ":") && !isIPText(h) {
			host, text = h, "0.0.0.0"+text[i:]
		}
	}
	addr, _, msg := parseAddr(text, false)
	if msg != "" {
		fail("server", "%s", msg)
		return "", false
	}
	s.Addr = addr
	if s.NoPort {
		s.Addr = netip.AddrPortFrom(addr.Addr(), 0)
	}
	return host, true
}

// defaultServer reads `default-server [params]`: the parameters the
// servers after it in the section (or, in defaults, in every backend)
// start from, as in haproxy.
func (p *parser) defaultServer(l line) {
	fail := func(kw, format string, a ...any) {
		p.errorf(l, kw, "%s, default-server: "+format, append([]any{p.key}, a...)...)
	}
	tmpl := p.defServer
	if slices.Contains(l.words[1:], "id") {
		fail("id", "'id' option is not accepted in default-server sections (accepted: id on each server line)")
		return
	}
	if p.serverParams(l.words[1:], &tmpl, map[string]bool{}, fail) {
		p.defServer = tmpl
		if p.kind == secDefaults {
			p.defaultsServer = tmpl
		}
	}
}

// serverParams reads server parameters into s; seen holds those already
// given on the line. It reports the first error through fail.
func (p *parser) serverParams(params []string, s *lbconfig.Server, seen map[string]bool, fail func(kw, format string, a ...any)) bool {
	s.TLS = cloneServerTLS(s.TLS) // a default-server's is shared
	p.srvTLS = nil
	for i := 0; i < len(params); i++ {
		param := params[i]
		if seen[param] {
			fail(param, "parameter %s is given twice", param)
			return false
		}
		seen[param] = true
		value := func(want string) (string, bool) {
			if i+1 == len(params) {
				fail(param, "parameter %s needs a value (%s)", param, want)
				return "", false
			}
			i++
			return params[i], true
		}
		switch param {
		case "cookie":
			v, ok := value("a cookie value")
			if !ok {
				return false
			}
			if p.hs != nil {
				p.hs.cookie = v
			}
		case "check":
			s.Check = true
		case "check-ssl":
			s.CheckSSL = true
		case "verify":
			v, ok := value("none or required")
			switch {
			case !ok:
				return false
			case v == "none":
				s.Verify = false
			case v == "required":
				s.Verify = true
			default:
				fail(param, "verify %q is not a verify method (accepted: none, required)", v)
				return false
			}
		case "weight", "fall", "rise":
			v, ok := value("a number")
			if !ok {
				return false
			}
			want := "1 or more"
			if param == "weight" {
				want = "1.." + strconv.Itoa(lbconfig.MaxWeight)
			}
			n, msg := intValue(param, v, 0, want)
			switch {
			case msg != "":
				fail(param, "%s", msg)
				return false
			case n == 0 && param == "weight":
				fail(param, "weight 0 is not supported by vipstack (accepted: 1..%d): "+
					"haproxy's weight 0 takes a server out of load balancing, which vipstack does not do", lbconfig.MaxWeight)
				return false
			case n == 0:
				fail(param, "%s 0 is out of range (accepted: 1 or more)", param)
				return false
			case param == "weight":
				s.Weight = n
			case param == "fall":
				s.Fall = n
			default:
				s.Rise = n
			}
		case "inter":
			v, ok := value("a time such as 2s")
			if !ok {
				return false
			}
			d, msg, warn := parseTime(v, msUnit)
			switch {
			case msg != "":
				fail(param, "inter %q %s", v, msg)
				return false
			case d == 0:
				fail(param, "inter %s is out of range (accepted: 1ms or more)", v)
				return false
			default:
				s.Inter = d
			}
			if warn != "" {
				p.warnf(p.cur, "%s", warn)
			}
		default:
			if proxyServerParam(param, s) {
				continue
			}
			if handled, ok := p.moreServerParam(param, value, s, fail); handled {
				if !ok {
					return false
				}
				continue
			}
			if handled, ok := p.serverTLSParam(param, value, s, fail); handled { // tls.go
				if !ok {
					return false
				}
				continue
			}
			if n := p.serverVersionParam(params[i:], s, fail); n != 0 {
				if n < 0 {
					return false
				}
				i += n - 1
				continue
			}
			fail(param, "parameter %q is not supported by vipstack (supported: %s)", param, serverParams)
			return false
		}
	}
	return p.endServerTLS(s, fail)
}

// bind parses `bind ADDRESS[,ADDRESS...] [v4v6]`; first is the index of
// the first new bind in the section, for Source keys.
func (p *parser) bind(l line, first int) []lbconfig.Bind {
	if len(l.words) < 2 {
		p.errorf(l, "bind", "bind needs an address (accepted: bind ADDRESS:PORT[,ADDRESS:PORT...] [v4v6])")
		return nil
	}
	v4v6 := false
	var opts bindOpts
	var bt bindTLS
	params := l.words[2:]
	for i := 0; i < len(params); i++ {
		param := params[i]
		switch {
		case param == "v4v6" && !v4v6:
			v4v6 = true
		case param == "v4v6":
			p.errorf(l, "bind", "bind parameter v4v6 is given twice")
			return nil
		default:
			if n := p.bindTLSParam(l, params[i:], &bt); n != 0 { // tls.go
				if n < 0 {
					return nil
				}
				i += n - 1
				continue
			}
			n, ok := p.moreBindParam(l, params[i:], &opts)
			if !ok {
				return nil
			}
			i += n - 1
		}
	}
	tlsConf, ok := p.endBindTLS(l, &bt)
	if !ok {
		return nil
	}
	var out []lbconfig.Bind
	for _, a := range strings.Split(l.words[1], ",") {
		if abs, ok, msg := abstractAddr(a); ok {
			if msg != "" {
				p.errorf(l, "bind", "bind %s", msg)
				return nil
			}
			if opts.sock != (lbconfig.BindSock{}) {
				p.errorf(l, "bind", "bind %s: %s applies to TCP sockets, not to an abstract UNIX socket (accepted: an IP address bind)", a, opts.sock)
				return nil
			}
			out = append(out, lbconfig.Bind{Abstract: abs, TLS: tlsConf})
			continue
		}
		for _, a := range p.expandPorts(l, a) {
			addr, host, msg := parseAddr(a, true)
			if msg != "" {
				p.errorf(l, "bind", "bind %s", msg)
				return nil
			}
			out = append(out, lbconfig.Bind{Addr: addr, Host: host, V4V6: v4v6, V6Only: opts.v6only, TLS: tlsConf, Sock: opts.sock})
		}
	}
	if v4v6 && opts.v6only {
		p.errorf(l, "bind", "bind: v4v6 and v6only contradict each other (accepted: one of them)")
		return nil
	}
	for i := range out {
		p.source(lbconfig.BindKey(p.key, first+i), l)
	}
	return out
}

// intArg parses a decimal integer in [lo, 2^31-1]; want says what is
// accepted, for the error message.
func (p *parser) intArg(l line, kw, v string, lo int, want string) (int, bool) {
	n, msg := intValue(kw, v, lo, want)
	if msg != "" {
		p.errorf(l, kw, "%s", msg)
		return 0, false
	}
	return n, true
}

// intValue is intArg's parse; it returns the message instead of
// reporting it, for callers that put the server's name in front.
func intValue(kw, v string, lo int, want string) (int, string) {
	n, err := strconv.ParseInt(v, 10, 32)
	switch {
	case errors.Is(err, strconv.ErrRange):
		// An integer all the same: say it is too large (or small).
		if !strings.Contains(want, "..") {
			want += "; at most 2147483647"
		}
		return 0, fmt.Sprintf("%s %s is out of range (accepted: %s)", kw, v, want)
	case err != nil:
		return 0, fmt.Sprintf("%s %q is not an integer (accepted: %s)", kw, v, want)
	case int(n) < lo:
		return 0, fmt.Sprintf("%s %d is out of range (accepted: %s)", kw, n, want)
	}
	return int(n), ""
}

// tcpCheck reads `tcp-check connect [port N]`, `tcp-check send STRING` and
// `tcp-check expect string STRING`.
func (p *parser) tcpCheck(l line) {
	const accepted = "tcp-check connect [port PORT], tcp-check send STRING, tcp-check expect string STRING"
	if p.tcpRulesAt == 0 {
		p.tcpRulesAt = l.num
	}
	args := l.words[1:]
	if len(args) == 0 {
		p.errorf(l, "tcp-check", "tcp-check needs a rule (accepted: %s)", accepted)
		return
	}
	var r lbconfig.TCPCheckRule
	switch {
	case args[0] == "connect" && (len(args) == 1 || len(args) == 3 && args[1] == "port"):
		if len(p.be.TCPCheck) > 0 {
			p.errorf(l, "tcp-check", "tcp-check connect after other rules in %s is not supported by vipstack (accepted: one connect, as the first rule)", p.key)
			return
		}
		r.Connect = true
		if len(args) == 3 {
			n, msg := intValue("port", args[2], 1, "1..65535")
			if msg == "" && n > 65535 {
				msg = fmt.Sprintf("port %d is out of range (accepted: 1..65535)", n)
			}
			if msg != "" {
				p.errorf(l, "tcp-check", "tcp-check connect %s", msg)
				return
			}
			r.Port = n
		}
	case args[0] == "send" && len(args) == 2:
		r.Send = args[1]
	case args[0] == "expect" && len(args) == 3 && args[1] == "string":
		r.Expect = args[2]
	default:
		p.errorf(l, "tcp-check", "tcp-check %q is not supported by vipstack (accepted: %s)", strings.Join(args, " "), accepted)
		return
	}
	p.be.TCPCheck = append(p.be.TCPCheck, r)
	p.checks.tcpRule(l.num)
}

// httpCheck reads `http-check expect status CODES` and `http-check
// expect rstatus REGEX`. haproxy matches the regex against the status
// code's three digits, anywhere in them; vipstack turns it into the
// codes 100..599 it matches when it reads the file (codes from 600 up,
// which haproxy could also match, never pass).
func (p *parser) httpCheck(l line) {
	args := l.words[1:]
	const accepted = httpCheckAccepted
	if len(args) > 0 && args[0] == "send" {
		p.httpCheckSend(l, args[1:])
		return
	}
	if len(args) > 0 && args[0] == "connect" {
		p.httpCheckConnect(l, args[1:])
		return
	}
	if body, ok := p.httpCheckBody(l, args); ok {
		if body != nil && p.once(l, "http-check expect") {
			p.httpCheckRule(l)
			p.be.Check.ExpectBody = body
		}
		return
	}
	if len(args) != 3 || args[0] != "expect" || (args[1] != "status" && args[1] != "rstatus") {
		p.errorf(l, "http-check", "http-check %q is not supported by vipstack (accepted: %s)", strings.Join(args, " "), accepted)
		return
	}
	if !p.once(l, "http-check expect") {
		return
	}
	codes := args[2]
	if args[1] == "rstatus" {
		re, err := regexp.Compile(args[2])
		if err != nil {
			p.errorf(l, "http-check", "http-check expect rstatus %q: %v (accepted: a regular expression Go's regexp package takes)", args[2], err)
			return
		}
		if codes = statusRegexRanges(re); codes == "" {
			p.errorf(l, "http-check", "http-check expect rstatus %q matches no status code 100..599, so every check would fail", args[2])
			return
		}
	} else if _, err := lbconfig.StatusRanges(codes); err != nil {
		p.errorf(l, "http-check", "http-check expect %v", err)
		return
	}
	p.httpCheckRule(l)
	p.be.Check.ExpectStatus = codes
}

// httpCheckRule notes an http-check expect rule's line.
func (p *parser) httpCheckRule(l line) {
	if p.httpRulesAt == 0 {
		p.httpRulesAt = l.num
	}
	p.checks.httpRule(l.num)
	p.checks.send.lastRule = "expect"
}

// statusRegexRanges are the codes 100..599 whose three digits re matches,
// as ExpectStatus ranges ("200-399"); "" for none.
func statusRegexRanges(re *regexp.Regexp) string {
	var parts []string
	start := -1
	for code := 100; code <= 600; code++ {
		in := code < 600 && re.MatchString(strconv.Itoa(code))
		switch {
		case in && start < 0:
			start = code
		case !in && start >= 0:
			if start == code-1 {
				parts = append(parts, strconv.Itoa(start))
			} else {
				parts = append(parts, strconv.Itoa(start)+"-"+strconv.Itoa(code-1))
			}
			start = -1
		}
	}
	return strings.Join(parts, ",")
}

// isIPText reports whether s parses as an IP address.
func isIPText(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

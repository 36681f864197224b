package dns

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/caddy/caddyfile"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/coredns/coredns/plugin/pkg/parse"
	"github.com/coredns/coredns/plugin/pkg/transport"
	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/dns/clusterdns"
	"github.com/vipstack/vipstack/internal/dns/mdnsplugin"
)

// serverType is CoreDNS's Caddy server type.
const serverType = "dns"

// Options configure the process's embedded CoreDNS.
type Options struct {
	// Registry returns the live node registry for each clusterdns block's
	// zone. nil, or a nil result, gives the block an empty private
	// registry (it still answers for its node lines).
	Registry clusterdns.RegistryFunc
	// Log receives CoreDNS's and Caddy's log output (plugin messages, the
	// log plugin's query lines). nil means os.Stderr. Process-wide.
	Log io.Writer
}

// Corefile is a Corefile's contents and where they came from.
type Corefile struct {
	// Path names the file in errors. The reload plugin re-reads it, so a
	// Corefile that uses reload needs the real path.
	Path     string
	Contents []byte
}

// MaxCorefileSize is the largest Corefile ReadCorefile, Check and Start
// accept, in bytes.
const MaxCorefileSize = 1 << 20

// ReadCorefile reads the Corefile at path, refusing one larger than
// MaxCorefileSize without reading it whole.
func ReadCorefile(path string) (Corefile, error) {
	f, err := os.Open(path)
	if err != nil {
		return Corefile{}, fmt.Errorf("dns: read Corefile: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > MaxCorefileSize {
		return Corefile{}, fmt.Errorf("dns: %s: %d bytes is larger than the %d accepted for a Corefile", path, st.Size(), MaxCorefileSize)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxCorefileSize+1))
	if err != nil {
		return Corefile{}, fmt.Errorf("dns: read Corefile %s: %w", path, err)
	}
	if len(b) > MaxCorefileSize {
		return Corefile{}, fmt.Errorf("dns: %s: more than the %d bytes accepted for a Corefile", path, MaxCorefileSize)
	}
	return Corefile{Path: path, Contents: b}, nil
}

func (c Corefile) name() string {
	if c.Path == "" {
		return "Corefile"
	}
	return c.Path
}

func (c Corefile) input() caddy.Input {
	return caddy.CaddyfileInput{Contents: c.Contents, Filepath: c.name(), ServerTypeName: serverType}
}

// Server is the process's embedded CoreDNS. It runs one Corefile at a time.
type Server struct {
	mu       sync.Mutex
	inst     *caddy.Instance // running instance; a reload replaces it
	path     string          // the running Corefile's Path, which Reload reads
	starting bool            // a Start is under way
	// stopping is set while Stop runs: an instance that a restart of the
	// reload plugin's, under way as Stop began, announces meanwhile is
	// stopped by the event hook (see event).
	stopping bool

	reloading sync.Mutex // one Reload at a time
}

// NewServer configures CoreDNS for this process: the directive order
// (Directives), the clusterdns plugin with o.Registry captured in its setup
// closure, the log output, and an event hook that follows reloads. These
// live in CoreDNS's process-wide tables, so NewServer succeeds once per
// process; a second call returns an error.
func NewServer(o Options) (*Server, error) {
	if _, err := caddy.DirectiveAction(serverType, clusterdns.Name); err == nil {
		return nil, errors.New("dns: NewServer already ran in this process: CoreDNS's plugin table is process-wide, so a process has one Server")
	}
	for _, d := range Directives() {
		if d == clusterdns.Name || d == mdnsplugin.Name {
			continue // registered below
		}
		if _, err := caddy.DirectiveAction(serverType, d); err != nil {
			return nil, fmt.Errorf("dns: plugin %q is in Directives but not linked into this binary: %w", d, err)
		}
	}
	if err := dnsserver.SetDirectives(Directives()); err != nil {
		return nil, fmt.Errorf("dns: set plugin order: %w", err)
	}
	plugin.Register(clusterdns.Name, clusterdns.NewSetup(o.Registry))
	// The browsers outlive each instance, so a reload keeps the mdns
	// lines it does not change browsing (mdnsplugin.Browsers).
	plugin.Register(mdnsplugin.Name, mdnsplugin.NewSetup(mdnsplugin.NewBrowsers()))
	s := &Server{}
	caddy.RegisterEventHook("vipstack-dns", s.event)
	caddy.RegisterParsingCallback(serverType, "reload", watchRestarts)
	w := o.Log
	if w == nil {
		w = os.Stderr
	}
	clog.SetOutput(w)
	caddy.Quiet = true     // no "Activating privacy features" etc.
	dnsserver.Quiet = true // no startup banner on os.Stdout; Addrs tells
	return s, nil
}

// event follows reloads: the reload plugin replaces the running instance
// with a new one and announces it with InstanceStartupEvent.
//
// Caddy announces the new instance only after it has stopped the old one,
// and the new one serves before that: a Stop that began in between took
// the old instance and waits for every server of the instances' shared
// WaitGroup, the new one's included. The hook stops that instance, so
// that Stop's wait ends (TestReload hung 20 minutes once without this).
func (s *Server) event(ev caddy.EventName, info any) error {
	inst, ok := info.(*caddy.Instance)
	if ev != caddy.InstanceStartupEvent || !ok {
		return nil
	}
	s.mu.Lock()
	stopping := s.stopping
	if s.inst != nil && s.inst != inst {
		s.inst = inst
	}
	s.mu.Unlock()
	if stopping {
		errs := inst.ShutdownCallbacks()
		if err := errors.Join(append(errs, inst.Stop())...); err != nil {
			return fmt.Errorf("dns: stop the instance a reload started while stopping: %w", err)
		}
	}
	return nil
}

// watchRestarts gives the instance being started, the first and each one
// a reload starts, a restart callback that refuses a reload whose new
// listeners another process holds (checkRestart); the reload plugin logs
// the error and the running Corefile stays. It is a parsing callback
// (after the reload directive, which every Corefile's setup passes
// whether it uses reload or not), so it runs in the goroutine that starts
// the instance, before the instance's startup event starts the reload
// plugin's timer, the only caller of Restart. Caddy lists the instance
// being started last in Instances from the start of its setup, and a
// process has one Server, which starts one instance at a time.
func watchRestarts(caddy.Context) error {
	all := caddy.Instances()
	if len(all) == 0 {
		return nil
	}
	inst := all[len(all)-1]
	inst.OnRestart = append(inst.OnRestart, func() error { return checkRestart(inst) })
	return nil
}

// checkRestart runs before inst restarts with a new Corefile: it reads the
// Corefile as the reload plugin just did (through Caddy's loaders, which
// read the -conf path Start set), refuses what Start refuses before
// Caddy sees it (Validate: unbalanced braces, and the lint checks, such as
// a hosts line whose address does not parse, which Caddy loads and
// CoreDNS silently drops), and checks its listeners, leaving out what inst
// listens on. A file changed again in between is checked in its newer
// version; the reload plugin reloads that one at its next tick.
func checkRestart(inst *caddy.Instance) error {
	in, err := caddy.LoadCaddyfile(serverType)
	if err != nil || in == nil {
		return nil // the reload itself reports it
	}
	cf := Corefile{Path: in.Path(), Contents: in.Body()}
	if err := Validate(cf); err != nil {
		return fmt.Errorf("%w; still serving the running Corefile", err)
	}
	udp, tcp := heldAddrs(inst)
	return checkListeners("reload", cf, udp, tcp)
}

// Check validates cf without serving it: syntax, plugin names, server block
// zones and every plugin's own setup. It changes nothing a running
// Corefile answers.
func (s *Server) Check(cf Corefile) error {
	if err := Validate(cf); err != nil {
		return err
	}
	if err := caddy.ValidateAndExecuteDirectives(cf.input(), nil, true); err != nil {
		return inClusterHint(cf, startErr("check", cf, err))
	}
	return nil
}

// CheckPortable validates cf as Check does, for a Corefile written for
// another host than this one: a kubernetes block that takes its API server
// from the pod it runs in (no endpoint, no kubeconfig, as in every
// Kubernetes deployment of CoreDNS) is checked in full when this process
// runs in no pod, and reported as a warning, not an error, since only the
// host is missing. Each warning names the file and line and says that
// starting here would fail. vipstack dns -check uses it.
func (s *Server) CheckPortable(cf Corefile) (warnings []string, err error) {
	if err := Validate(cf); err != nil {
		return nil, err
	}
	lines := inClusterLines(cf)
	why := ""
	if len(lines) > 0 {
		why = notInPod()
	}
	if why == "" {
		return nil, s.Check(cf)
	}
	run, ok := withEndpoint(cf, lines)
	if !ok {
		return nil, s.Check(cf)
	}
	if err := caddy.ValidateAndExecuteDirectives(run.input(), nil, true); err != nil {
		return nil, startErr("check", cf, err)
	}
	for _, l := range lines {
		warnings = append(warnings, fmt.Sprintf("%s:%d: kubernetes names no endpoint or kubeconfig, so it takes the API server from the pod it runs in, and this process is not in one (%s): the block is valid, but starting this Corefile here would fail", l.file, l.line, why))
	}
	return warnings, nil
}

// Start validates cf and starts serving it. It returns once every plain
// DNS listener answers.
func (s *Server) Start(cf Corefile) error {
	s.mu.Lock()
	busy := s.inst != nil || s.starting
	if !busy {
		s.starting = true
	}
	s.mu.Unlock()
	if busy {
		return errors.New("dns: Start: a Corefile is already running; Stop it first")
	}
	defer func() {
		s.mu.Lock()
		s.starting = false
		s.mu.Unlock()
	}()
	if err := Validate(cf); err != nil {
		return err
	}
	if err := checkListeners("start", cf, nil, nil); err != nil {
		return err
	}
	// The reload plugin reloads through Caddy's Corefile loaders; coremain's
	// loader reads the -conf flag it registered on the standard flag set.
	if f := flag.Lookup("conf"); f != nil && cf.Path != "" {
		abs, err := filepath.Abs(cf.Path)
		if err != nil {
			return fmt.Errorf("dns: Corefile path %q: %w", cf.Path, err)
		}
		if err := f.Value.Set(abs); err != nil {
			return fmt.Errorf("dns: point reload at %s: %w", abs, err)
		}
	}
	inst, err := caddy.Start(cf.input())
	if err != nil {
		return inClusterHint(cf, startErr("start", cf, err))
	}
	// Caddy starts the servers' loops in goroutines. A server stopped
	// before its loop runs is never stopped (CoreDNS skips it) and Stop
	// would wait for it forever; so Start returns only once every listener
	// has answered. Only plain DNS listeners can be asked; with other
	// transports (tls://, https://, ...) in the Corefile, Start does not
	// wait, and a Stop right after Start can hang.
	servers := inst.Servers()
	if !plainDNS(cf) {
		servers = nil
	}
	for _, sl := range servers {
		for _, a := range []net.Addr{sl.LocalAddr(), sl.Addr()} {
			if a == nil {
				continue
			}
			if err := probe(a); err != nil {
				errs := append(inst.ShutdownCallbacks(), inst.Stop())
				return fmt.Errorf("dns: start %s: %w", cf.name(), errors.Join(append([]error{err}, errs...)...))
			}
		}
	}
	s.mu.Lock()
	s.inst, s.path = inst, cf.Path
	s.mu.Unlock()
	return nil
}

// Reload reads the running Corefile again from its path and restarts
// CoreDNS with it, as CoreDNS does on SIGUSR1 (vipstack dns calls it on
// SIGUSR1 and SIGHUP). The new Corefile goes through what Start checks
// (Validate, the listeners; see checkRestart) and every plugin's setup
// before it replaces the running one; if any of that fails, Reload
// returns the error (naming the file and line where there is one) and the
// running Corefile keeps serving, unchanged.
func (s *Server) Reload() error {
	s.reloading.Lock()
	defer s.reloading.Unlock()
	s.mu.Lock()
	inst, path := s.inst, s.path
	s.mu.Unlock()
	if inst == nil {
		return errors.New("dns: reload: no Corefile is running")
	}
	if path == "" {
		return errors.New("dns: reload: the running Corefile was given without a path, so there is no file to read again")
	}
	const kept = "still serving the running Corefile"
	cf, err := ReadCorefile(path)
	if err != nil {
		return fmt.Errorf("%w; %s", err, kept)
	}
	if err := Validate(cf); err != nil {
		return fmt.Errorf("%w; %s", err, kept)
	}
	next, err := inst.Restart(cf.input())
	if err != nil {
		return fmt.Errorf("dns: reload %s: %w; %s", cf.name(), err, kept)
	}
	s.mu.Lock()
	if s.inst == inst { // the startup event hook has usually done it already
		s.inst = next
	}
	s.mu.Unlock()
	return nil
}

// plainDNS reports whether every server block of cf serves plain DNS
// (no scheme, or dns://).
func plainDNS(cf Corefile) bool {
	blocks, err := caddyfile.Parse(cf.name(), bytes.NewReader(cf.Contents), nil)
	if err != nil {
		return false
	}
	for _, b := range blocks {
		for _, k := range b.Keys {
			if t, _ := parse.Transport(k); t != transport.DNS {
				return false
			}
		}
	}
	return true
}

// probeTimeout bounds how long Start waits for a new listener to answer.
const probeTimeout = 5 * time.Second

// probe sends a message without a question to a DNS listener and waits for
// the reply (FORMERR or SERVFAIL: the server answers it without consulting
// any plugin), retrying until probeTimeout. A wildcard listener is reached
// through loopback.
func probe(a net.Addr) error {
	var network string
	var ap netip.AddrPort
	switch a := a.(type) {
	case *net.UDPAddr:
		network, ap = "udp", a.AddrPort()
	case *net.TCPAddr:
		network, ap = "tcp", a.AddrPort()
	default:
		return nil // not a plain DNS listener
	}
	targets := []netip.Addr{ap.Addr().Unmap()}
	if targets[0].IsUnspecified() {
		// Go's "[::]" listener is dual-stack; try both loopbacks.
		targets = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	m := new(dns.Msg)
	c := &dns.Client{Net: network, Timeout: 250 * time.Millisecond}
	var last error
	for i := 0; ctx.Err() == nil; i++ {
		target := netip.AddrPortFrom(targets[i%len(targets)], ap.Port()).String()
		m.Id = dns.Id()
		r, _, err := c.ExchangeContext(ctx, m, target)
		if err != nil {
			last = err
			continue
		}
		if !r.Response {
			// Our own query back: while nothing listens on the port, the
			// kernel may give the probe's socket that very port, and it
			// hears itself (a test's stock CoreDNS then lost its port).
			last = errors.New("no server: the probe received its own query")
			continue
		}
		return nil
	}
	return fmt.Errorf("listener %s/%s did not answer within %v: %w", a, network, probeTimeout, last)
}

// Addrs returns the addresses the running Corefile listens on (UDP and TCP
// for plain DNS), in the order the server blocks were set up.
func (s *Server) Addrs() []net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inst == nil {
		return nil
	}
	var out []net.Addr
	for _, sl := range s.inst.Servers() {
		if a := sl.LocalAddr(); a != nil {
			out = append(out, a)
		}
		if a := sl.Addr(); a != nil {
			out = append(out, a)
		}
	}
	return out
}

// Stop runs the plugins' shutdown callbacks, closes every listener and waits
// for the servers to finish. Stopping a stopped Server does nothing.
func (s *Server) Stop() error {
	s.reloading.Lock() // let a Reload finish, so Stop sees the instance it left
	defer s.reloading.Unlock()
	s.mu.Lock()
	inst := s.inst
	s.inst, s.path = nil, ""
	s.stopping = inst != nil
	s.mu.Unlock()
	if inst == nil {
		return nil
	}
	errs := inst.ShutdownCallbacks()
	errs = append(errs, inst.Stop())
	inst.Wait() // also for a restart under way (event stops what it starts)
	s.mu.Lock()
	s.stopping = false
	s.mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("dns: stop: %w", err)
	}
	return nil
}

// Run starts cf, serves until ctx is done, and stops.
func (s *Server) Run(ctx context.Context, cf Corefile) error {
	if err := s.Start(cf); err != nil {
		return err
	}
	<-ctx.Done()
	return s.Stop()
}

// braces checks that every '{' is closed and every '}' closes something:
// Caddy's parser quietly accepts a block left open at the end of the file
// and a stray '}', which hides typos.
func braces(cf Corefile) error {
	d := caddyfile.NewDispenser(cf.name(), bytes.NewReader(cf.Contents))
	var open []int // lines of the unclosed '{'
	for d.Next() {
		switch d.Val() {
		case "{":
			open = append(open, d.Line())
		case "}":
			if len(open) == 0 {
				return fmt.Errorf("dns: %s:%d: '}' without a matching '{'", cf.name(), d.Line())
			}
			open = open[:len(open)-1]
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("dns: %s:%d: '{' is never closed; add the matching '}'", cf.name(), open[len(open)-1])
	}
	return nil
}

// startErr wraps an error from Caddy, adding what a server block key may be
// when that is what Caddy rejected.
func startErr(op string, cf Corefile, err error) error {
	err = explain(cf, err)
	if strings.Contains(err.Error(), "inspecting server blocks") {
		return fmt.Errorf("dns: %s %s: %w; a server block starts with zones such as \".\", \"example.com\" or \"example.com:1053\"", op, cf.name(), err)
	}
	return fmt.Errorf("dns: %s %s: %w", op, cf.name(), err)
}

// Validate checks a Corefile's syntax, that every directive is a plugin this
// build has (naming the file, line and the plugins it would accept; for a
// stock plugin left out, Refused's reason), and
// what the standard plugins would accept silently or report without a line
// (lint). Plugin arguments are otherwise checked when the plugins set up
// (Check, Start).
func Validate(cf Corefile) error {
	if len(cf.Contents) > MaxCorefileSize {
		return fmt.Errorf("dns: %s: %d bytes is larger than the %d accepted for a Corefile", cf.name(), len(cf.Contents), MaxCorefileSize)
	}
	if err := braces(cf); err != nil {
		return err
	}
	blocks, err := caddyfile.Parse(cf.name(), bytes.NewReader(cf.Contents), nil)
	if err != nil {
		return fmt.Errorf("dns: %w", err)
	}
	if len(blocks) == 0 {
		return fmt.Errorf("dns: %s: no server blocks; want at least one, e.g. \". {\\n    forward . 198.18.0.1\\n}\"", cf.name())
	}
	known := map[string]bool{}
	for _, d := range Directives() {
		known[d] = true
	}
	type unknown struct {
		name string
		tok  caddyfile.Token
	}
	var bad []unknown
	for _, b := range blocks {
		for name, toks := range b.Tokens {
			if !known[name] && len(toks) > 0 {
				bad = append(bad, unknown{name, toks[0]})
			}
		}
	}
	if len(bad) == 0 {
		return lint(cf, blocks)
	}
	sort.Slice(bad, func(i, j int) bool { return bad[i].tok.Line < bad[j].tok.Line })
	b := bad[0]
	file := b.tok.File
	if file == "" {
		file = cf.name()
	}
	if why, ok := Refused()[b.name]; ok {
		return fmt.Errorf("dns: %s:%d: plugin %q is a stock CoreDNS plugin that vipstack does not build in: %s; this build has: %s",
			file, b.tok.Line, b.name, why, strings.Join(Directives(), ", "))
	}
	hint := ""
	if strings.ContainsAny(b.name, ".:") {
		hint = " (if it was meant to open a server block, the lines above it are outside any block)"
	}
	return fmt.Errorf("dns: %s:%d: unknown plugin %q%s; this build has: %s",
		file, b.tok.Line, b.name, hint, strings.Join(Directives(), ", "))
}

package httploop

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// Mode is `vipstack lb --http-engine`: which engine serves the mode http
// frontends.
type Mode string

const (
	// Std is lb/httpproxy (net/http) for every mode http frontend.
	Std Mode = "std"
	// Loop is this package's engine for every mode http frontend; a
	// frontend using something it lacks refuses the start or reload.
	Loop Mode = "loop"
	// Auto is Loop for the frontends it supports, Std for the others
	// (one log line each, with the reason).
	Auto Mode = "auto"
)

// ParseMode reads --http-engine's value ("" is Std).
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", Std:
		return Std, nil
	case Loop, Auto:
		return Mode(s), nil
	}
	return "", fmt.Errorf("http-engine %q: accepted: std, loop or auto", s)
}

// Refusal is a mode http frontend the loop engine cannot serve as
// haproxy would: Directive, at Pos, needs lb/httpproxy.
type Refusal struct {
	Pos       string // "file:line" of the directive, else of its section; "" when unknown
	Proxy     string // "frontend main", "frontend main (backend web)"
	Directive string // as haproxy names it
	Why       string
}

func (r *Refusal) Error() string {
	var b strings.Builder
	if r.Pos != "" {
		b.WriteString(r.Pos + ": ")
	}
	fmt.Fprintf(&b, "%s: %q needs the std HTTP engine: %s (accepted with --http-engine loop: plain binds, HTTP/1.0 and 1.1 with keep-alive, "+
		"balance roundrobin, static-rr, leastconn, first or source, acl, use_backend, http-request rules but return and use-service, redirect, "+
		"option forwardfor, option httplog or log-format without captures, timeouts, maxconn, retries; use --http-engine auto or std for this proxy)", r.Proxy, r.Directive, r.Why)
	return b.String()
}

// Check is the start's, reload's and --check's test of cfg for mode:
// with Loop, the first mode http frontend the loop cannot serve.
func Check(cfg *lbconfig.Config, mode Mode) error {
	if mode != Loop {
		return nil
	}
	for i := range cfg.Frontends {
		if r := Refuse(cfg, &cfg.Frontends[i]); r != nil {
			return r
		}
	}
	return nil
}

// Refuse says why the loop engine cannot serve frontend f of cfg (nil:
// it can, or f is not mode http).
func Refuse(cfg *lbconfig.Config, f *lbconfig.Frontend) *Refusal {
	h := f.HTTP
	if h == nil {
		return nil
	}
	name := "frontend " + f.Name
	section := []string{lbconfig.FrontendKey(f.Name), lbconfig.ListenKey(f.Name)}
	fail := func(directive, why string, keys ...string) *Refusal {
		return &Refusal{Pos: pos(cfg, append(keys, section...)...), Proxy: name, Directive: directive, Why: why}
	}
	for i, bd := range f.Binds {
		keys := []string{lbconfig.BindKey(section[0], i), lbconfig.BindKey(section[1], i)}
		switch {
		case bd.TLS != nil:
			return fail("bind ... ssl", "the loop does not terminate TLS", keys...)
		case bd.Abstract != "":
			return fail("bind abns@"+bd.Abstract, "the loop accepts TCP sockets only", keys...)
		}
	}
	switch {
	case h.TCPMode:
		return fail("mode tcp", "a mode tcp frontend before a mode http backend is served by the std engine")
	case f.TCPRequest != nil:
		return fail("tcp-request", "the loop runs no tcp-request rules")
	case h.MonitorURI != "":
		return fail("monitor-uri", "the loop serves no monitor page", lbconfig.ItemKey(section[0], "monitor-uri"))
	case len(h.Captures) > 0 || h.CaptureCookie != nil:
		return fail("capture", "the loop captures no headers or cookies")
	}
	if r := proxyRefusal(&h.HTTPProxy, fail); r != nil {
		return r
	}
	// Every backend a request may go to: default_backend's and
	// use_backend's (one the configuration lacks gets the 503 of no
	// backend, as std's).
	names := []string{f.Backend}
	for _, u := range h.UseBackends {
		names = append(names, u.Backend)
	}
	for i, n := range names {
		if b := findBackend(cfg, n); b != nil && !slices.Contains(names[:i], n) {
			if r := backendRefusal(cfg, name, b); r != nil {
				return r
			}
		}
	}
	return nil
}

func backendRefusal(cfg *lbconfig.Config, fe string, b *lbconfig.Backend) *Refusal {
	bk := lbconfig.BackendKey(b.Name)
	fail := func(directive, why string, keys ...string) *Refusal {
		keys = append(keys, bk, lbconfig.ListenKey(b.Name))
		return &Refusal{Pos: pos(cfg, keys...), Proxy: fe + " (backend " + b.Name + ")", Directive: directive, Why: why}
	}
	bh := b.HTTP
	switch {
	case bh == nil:
		return fail("mode tcp", "a mode tcp backend behind a mode http frontend is served by the std engine")
	case b.Balance == lbconfig.URI || b.Balance == lbconfig.Header:
		return fail("balance "+string(b.Balance), "the loop hashes no request content", lbconfig.ItemKey(bk, "balance"))
	case bh.Cookie != nil:
		return fail("cookie", "the loop inserts and reads no persistence cookie", lbconfig.ItemKey(bk, "cookie"))
	case len(bh.IgnorePersist) > 0:
		return fail("ignore-persist", "the loop has no persistence to ignore")
	case b.AbortOnClose:
		return fail("option abortonclose", "the loop does not abort a request whose client closed", lbconfig.ItemKey(bk, "option abortonclose"))
	}
	if r := proxyRefusal(&bh.HTTPProxy, fail); r != nil {
		return r
	}
	for _, s := range b.Servers {
		sk := lbconfig.ServerKey(b.Name, s.Name)
		switch {
		case s.SSL:
			return fail("server "+s.Name+" ssl", "the loop speaks plain HTTP to servers", sk)
		case s.Abstract != "":
			return fail("server "+s.Name+" abns@"+s.Abstract, "the loop connects to TCP servers only", sk)
		case s.SendProxy != 0:
			return fail("server "+s.Name+" send-proxy", "the loop sends no PROXY header", sk)
		}
	}
	return nil
}

// proxyRefusal is Refuse's test of the directives frontends and
// backends share.
func proxyRefusal(p *lbconfig.HTTPProxy, fail func(directive, why string, keys ...string) *Refusal) *Refusal {
	for _, r := range p.Rules {
		if r.Action == "use-service" || r.Action == "return" {
			return fail("http-request "+r.Action, "the loop answers only deny and redirect rules itself")
		}
	}
	switch {
	case len(p.ResponseRules) > 0:
		return fail("http-response "+p.ResponseRules[0].Action, "the loop runs no http-response rules")
	case p.OriginalTo != nil:
		return fail("option originalto", "the loop adds no X-Original-To")
	case p.BufferRequest:
		return fail("option http-buffer-request", "the loop streams request bodies")
	case p.Conn != "":
		d := "option http-server-close"
		if p.Conn == "close" {
			d = "option httpclose"
		}
		return fail(d, "the loop keeps connections alive on both sides (haproxy's default mode only)")
	case len(p.ErrorFiles) > 0:
		return fail("errorfile", "the loop answers errors with haproxy's built-in pages only")
	case p.Stats != nil:
		return fail("stats enable", "the loop serves no stats page")
	case p.Compression != nil:
		return fail("compression", "the loop does not compress")
	}
	return nil
}

func findBackend(cfg *lbconfig.Config, name string) *lbconfig.Backend {
	for i := range cfg.Backends {
		if cfg.Backends[i].Name == name {
			return &cfg.Backends[i]
		}
	}
	return nil
}

// pos is the file and line of the first of keys the reader recorded.
func pos(cfg *lbconfig.Config, keys ...string) string {
	for _, k := range keys {
		if p, ok := cfg.Source[k]; ok {
			return p
		}
	}
	return ""
}

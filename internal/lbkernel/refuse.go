package lbkernel

import (
	"fmt"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// refusal returns why the kernel cannot serve mode tcp frontend f with
// its backend b (nil: no default_backend), or nil when it can.
func refusal(cfg *lbconfig.Config, f *lbconfig.Frontend, b *lbconfig.Backend) *Refusal {
	fe := proxyName(cfg, f.Name)
	fail := func(directive, why string, keys ...string) *Refusal {
		keys = append(keys, lbconfig.FrontendKey(f.Name), lbconfig.ListenKey(f.Name))
		return &Refusal{Pos: pos(cfg, keys...), Proxy: fe, Directive: directive, Why: why}
	}
	for i, bd := range f.Binds {
		key := lbconfig.BindKey(lbconfig.FrontendKey(f.Name), i)
		lkey := lbconfig.BindKey(lbconfig.ListenKey(f.Name), i)
		switch {
		case bd.TLS != nil:
			return fail("bind ... ssl", "TLS is terminated in user space", key, lkey)
		case bd.Abstract != "":
			return fail("bind abns@"+bd.Abstract, "an abstract UNIX socket is not an IP address nftables can match", key, lkey)
		case !bd.Addr.Addr().IsValid():
			return fail("bind "+bd.Host, "a bind to a host name the reader did not resolve has no address to match", key, lkey)
		case bd.Addr.Port() == 0:
			return fail("bind :0", "a port the kernel chooses at listen time is not known to the rules", key, lkey)
		case bd.Sock != (lbconfig.BindSock{}):
			return fail("bind ... "+bd.Sock.String(), "options of the listening socket, which DNAT bypasses: the kernel path sends clients straight to the server", key, lkey)
		}
	}
	if f.TCPRequest != nil {
		return fail("tcp-request", "rules that inspect or act on a connection run in user space", lbconfig.ItemKey(lbconfig.FrontendKey(f.Name), "tcp-request"))
	}
	if len(f.LogTargets) > 0 {
		return fail("log", "the kernel path sees no connection to log (its counters are per frontend, not per connection)", lbconfig.ItemKey(lbconfig.FrontendKey(f.Name), "log"))
	}
	if f.KeepAlive {
		return fail("option clitcpka", "TCP keep-alives are set on a socket the relay owns; with DNAT the client talks to the server's socket")
	}
	if b == nil {
		return fail("default_backend", "a frontend without a backend refuses its clients in user space")
	}
	return backendRefusal(cfg, fe, b)
}

// backendRefusal is refusal for b, the backend of frontend fe.
func backendRefusal(cfg *lbconfig.Config, fe string, b *lbconfig.Backend) *Refusal {
	bk := lbconfig.BackendKey(b.Name)
	fail := func(directive, why string, keys ...string) *Refusal {
		keys = append(keys, bk, lbconfig.ListenKey(b.Name))
		return &Refusal{Pos: pos(cfg, keys...), Proxy: fe + " (backend " + b.Name + ")", Directive: directive, Why: why}
	}
	switch bal := balanceOf(b); {
	case bal == lbconfig.StaticRR:
		return fail("balance static-rr", "nftables' counter (numgen) spreads by weight in its own order, not along haproxy's slot map", lbconfig.ItemKey(bk, "balance"))
	case bal != lbconfig.RoundRobin && bal != lbconfig.Source:
		return fail("balance "+string(bal), "nftables picks by a counter (numgen) or a hash of the source address (jhash), not by connections counted or by request content", lbconfig.ItemKey(bk, "balance"))
	case bal == lbconfig.Source && b.HashType == "consistent":
		return fail("hash-type consistent", "the kernel path hashes map-based (jhash modulo the total weight)", lbconfig.ItemKey(bk, "hash-type"))
	case b.HTTP != nil:
		return fail("mode http", "an HTTP backend needs the HTTP proxy")
	case b.StickTable != nil || len(b.StickRules) > 0:
		return fail("stick-table / stick on", "stickiness is a table the relay keeps per connection", lbconfig.ItemKey(bk, "stick-table"))
	case b.KeepAlive:
		return fail("option srvtcpka", "TCP keep-alives are set on a socket the relay owns")
	}
	fam := 0
	for _, s := range b.Servers {
		sk := lbconfig.ServerKey(b.Name, s.Name)
		sfail := func(directive, why string) *Refusal {
			return fail("server "+s.Name+" "+directive, why, sk)
		}
		a := s.Addr.Addr()
		switch {
		case s.Abstract != "":
			return sfail("abns@"+s.Abstract, "an abstract UNIX socket cannot be a DNAT target")
		case s.NoPort || !a.IsValid() || a.IsUnspecified() || s.Addr.Port() == 0:
			return sfail(s.Addr.String(), "DNAT needs a fixed IP address and port (not the client's destination)")
		case s.Resolvers != "" || s.Unresolved:
			return sfail("resolvers "+s.Resolvers, "addresses re-resolved at run time are not followed by the kernel path yet")
		case s.SendProxy != 0:
			return sfail(fmt.Sprintf("send-proxy (v%d)", s.SendProxy), "a PROXY header is bytes the relay writes before the client's")
		case s.SSL:
			return sfail("ssl", "TLS to the server is made in user space")
		case s.MaxConn > 0 || s.MaxQueue > 0:
			return sfail("maxconn/maxqueue", "a per-server cap queues clients in user space")
		case s.SlowStart > 0:
			return sfail("slowstart", "the ramp of a server's weight is not written to the kernel's map yet")
		case s.ShutdownOnDown:
			return sfail("on-marked-down shutdown-sessions", "closing a DOWN server's connections needs their conntrack entries flushed, which the kernel path does not do yet")
		}
		f := 6
		if a.Is4() {
			f = 4
		}
		if fam != 0 && f != fam {
			return sfail(s.Addr.String(), "a backend's servers must share one address family: DNAT cannot move a connection from IPv4 to IPv6")
		}
		fam = f
	}
	return nil
}

// notes are what the kernel path does otherwise than the relay for f
// and b, which it serves: logged at start, one line each.
func notes(cfg *lbconfig.Config, f *lbconfig.Frontend, b *lbconfig.Backend) []string {
	fe := proxyName(cfg, f.Name)
	t := cfg.Effective(f, b)
	var out []string
	if idle := max(t.Client, t.Server, t.Tunnel); idle > 0 {
		out = append(out, fmt.Sprintf("%s: timeout client/server/tunnel (%v): the kernel path closes no idle connection; conntrack forgets an idle established one after net.netfilter.nf_conntrack_tcp_timeout_established (5 days by default)", fe, idle.Round(time.Second)))
	}
	retries := b.Retries
	if retries == 0 {
		retries = cfg.Retries
	}
	out = append(out, fmt.Sprintf("%s: retries %d, timeout connect %v: the kernel path does not retry a connect; a client's SYN to a server that died before its check failed is refused or times out (the relay would try another server)", fe, retries, t.Connect))
	// nft's `ct count over N drop` was tried: its list keeps closed
	// connections until a later add collects them (a few per jiffy), so
	// at a high rate of short connections it drops far below N
	// (measured: maxconn 50, 10 clients of Connection: close, 92
	// requests/s against 7.8k without it).
	out = append(out, fmt.Sprintf("%s: maxconn %d is not enforced by the kernel path: clients past it are neither queued nor refused (nft's ct count drops new connections far below its limit when short connections come fast)", fe, frontendMaxConn(cfg, f)))
	return out
}

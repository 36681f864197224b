package render

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// HAProxyCfg writes cfg as a haproxy.cfg for haproxy 2.6 that
// haproxycfg.Parse reads back into cfg (up to Source and Warnings). It
// writes what lbconfig models; a setting haproxy.cfg cannot express per
// backend (`option dontlognull`, which haproxycfg reads from defaults
// only, differing between backends) is an error. The `log` targets every
// frontend and backend share are written in defaults (the cluster's:
// stdout, which is where a container's logs belong), the others in their
// sections.
func HAProxyCfg(cfg *lbconfig.Config) ([]byte, error) {
	for _, fe := range cfg.Frontends {
		if fe.HTTP != nil {
			return nil, fmt.Errorf("frontend %s is mode http, which the writer does not render (accepted: TCP frontends and backends)", fe.Name)
		}
	}
	var b bytes.Buffer
	var errs []error
	w := func(indent bool, words ...string) {
		for _, s := range words {
			if s == "" || strings.ContainsAny(s, " \t\r\n#\\'\"") {
				errs = append(errs, fmt.Errorf("%q cannot be written as one haproxy.cfg word (no blanks, quotes, '#' or '\\')", s))
			}
		}
		if indent {
			b.WriteString("  ")
		}
		b.WriteString(strings.Join(words, " "))
		b.WriteByte('\n')
	}
	dontLogNull := len(cfg.Backends) > 0 && cfg.Backends[0].DontLogNull
	for _, be := range cfg.Backends {
		if be.DontLogNull != dontLogNull {
			return nil, fmt.Errorf("backend %s: dontlognull differs between backends; haproxy.cfg sets it in defaults for all", be.Name)
		}
	}

	b.WriteString("# haproxy.cfg rendered by `vipstack render`: the API load balancer.\n")
	b.WriteString("# `vipstack node` runs the same load balancer natively.\n")
	w(false, "global")
	if cfg.LogTag != "" {
		w(true, "log-tag", cfg.LogTag)
	}
	if cfg.GlobalMaxConn > 0 {
		w(true, "maxconn", strconv.Itoa(cfg.GlobalMaxConn))
	}
	if cfg.BufSize > 0 {
		w(true, "tune.bufsize", strconv.Itoa(cfg.BufSize))
	}
	if cfg.MaxRewrite != nil {
		w(true, "tune.maxrewrite", strconv.Itoa(*cfg.MaxRewrite))
	}
	w(false, "defaults")
	if cfg.MaxConn > 0 {
		w(true, "maxconn", strconv.Itoa(cfg.MaxConn))
	}
	w(true, "mode", "tcp")
	common := commonLogTargets(cfg)
	logLines := func(ts []lbconfig.LogTarget) {
		for _, lt := range ts[len(common):] {
			w(true, append([]string{"log"}, strings.Fields(lt.String())...)...)
		}
	}
	for _, lt := range common {
		w(true, append([]string{"log"}, strings.Fields(lt.String())...)...)
	}
	if dontLogNull {
		w(true, "option", "dontlognull")
	}
	if cfg.Retries > 0 {
		w(true, "retries", strconv.Itoa(cfg.Retries))
	}
	t := cfg.Timeouts
	for _, to := range []struct {
		name string
		d    time.Duration
	}{
		{"http-request", t.HTTPRequest}, {"http-keep-alive", t.HTTPKeepAlive}, {"queue", t.Queue},
		{"connect", t.Connect}, {"client", t.Client}, {"server", t.Server}, {"tunnel", t.Tunnel},
	} {
		if to.d > 0 {
			w(true, "timeout", to.name, haproxyTime(to.d))
		}
	}
	for _, fe := range cfg.Frontends {
		w(false, "frontend", fe.Name)
		if id, ok := cfg.ProxyIDs[lbconfig.FrontendKey(fe.Name)]; ok {
			w(true, "id", strconv.Itoa(id))
		}
		for _, bd := range fe.Binds {
			words, err := bindTLSWords(bd)
			if err != nil {
				errs = append(errs, fmt.Errorf("frontend %s: %w", fe.Name, err))
			}
			w(true, append(bindWords(bd), words...)...)
		}
		rules, err := tcpRequestLines(fe.TCPRequest) // tcprequest.go
		if err != nil {
			errs = append(errs, fmt.Errorf("frontend %s: %w", fe.Name, err))
		}
		for _, words := range rules {
			w(true, words...)
		}
		w(true, "default_backend", fe.Backend)
		logLines(fe.LogTargets)
	}
	for _, m := range cfg.Monitors {
		w(false, "listen", m.Name)
		if id, ok := cfg.ProxyIDs[lbconfig.ListenKey(m.Name)]; ok {
			w(true, "id", strconv.Itoa(id))
		}
		for _, bd := range m.Binds {
			w(true, bindWords(bd)...)
		}
		w(true, "mode", "http")
		w(true, "monitor-uri", m.URI)
		w(true, "option", "dontlognull")
	}
	for _, s := range cfg.Stats {
		w(false, "listen", s.Name)
		if id, ok := cfg.ProxyIDs[lbconfig.ListenKey(s.Name)]; ok {
			w(true, "id", strconv.Itoa(id))
		}
		for _, bd := range s.Binds {
			w(true, bindWords(bd)...)
		}
		w(true, "mode", "http")
		w(true, "stats", "enable")
		if s.HideVersion {
			w(true, "stats", "hide-version")
		}
		w(true, "stats", "uri", s.URI)
		if s.Refresh > 0 {
			w(true, "stats", "refresh", haproxyTime(s.Refresh))
		}
		for _, u := range s.Users {
			w(true, "stats", "auth", u.User+":"+u.Pass)
		}
		if ps := s.Prometheus; ps != nil {
			words := []string{"http-request", "use-service", "prometheus-exporter"}
			if len(ps.Paths) > 0 {
				cond := "if"
				if ps.Unless {
					cond = "unless"
				}
				words = append(append(append(words, cond, "{", "path"), ps.Paths...), "}")
			}
			w(true, words...)
		}
	}
	for _, be := range cfg.Backends {
		w(false, "backend", be.Name)
		if id, ok := cfg.ProxyIDs[lbconfig.BackendKey(be.Name)]; ok {
			w(true, "id", strconv.Itoa(id))
		}
		logLines(be.LogTargets)
		if be.Check.Method != "" {
			w(true, "option", "httpchk", be.Check.Method, be.Check.URI, be.Check.Version)
			for _, words := range httpCheckLines(be.Check) {
				b.WriteString("  " + strings.Join(words, " ") + "\n")
			}
		}
		if be.LogHealthChecks {
			w(true, "option", "log-health-checks")
		}
		if be.RedispatchOnRetry {
			w(true, "option", "redispatch")
		}
		if be.Balance != "" {
			w(true, "balance", string(be.Balance))
		}
		for _, s := range be.Servers {
			words := []string{"server", s.Name, hostPort(s.Addr)}
			if s.Weight > 0 {
				words = append(words, "weight", strconv.Itoa(s.Weight))
			}
			if !s.Verify {
				words = append(words, "verify", "none")
			}
			if s.Check {
				words = append(words, "check")
			}
			if s.CheckSSL {
				words = append(words, "check-ssl")
			}
			if s.Inter > 0 {
				words = append(words, "inter", haproxyTime(s.Inter))
			}
			if s.Fall > 0 {
				words = append(words, "fall", strconv.Itoa(s.Fall))
			}
			if s.Rise > 0 {
				words = append(words, "rise", strconv.Itoa(s.Rise))
			}
			switch s.SendProxy {
			case 1:
				words = append(words, "send-proxy")
			case 2:
				words = append(words, "send-proxy-v2")
			}
			w(true, append(words, serverTLSWords(s)...)...)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// haproxyTime writes d in seconds, or milliseconds when it is not whole.
func haproxyTime(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// hostPort writes an address haproxy's way: the port after the last colon,
// IPv6 without brackets (":::9445", "fd00::11:6443").
func hostPort(a netip.AddrPort) string {
	return a.Addr().String() + ":" + strconv.Itoa(int(a.Port()))
}

func bindWords(bd lbconfig.Bind) []string {
	var addr string
	switch {
	case bd.Host != "":
		addr = bd.Host + ":" + strconv.Itoa(int(bd.Addr.Port()))
	case bd.Addr.Addr() == netip.IPv4Unspecified():
		addr = "*:" + strconv.Itoa(int(bd.Addr.Port()))
	default:
		addr = hostPort(bd.Addr)
	}
	if bd.V4V6 {
		return []string{"bind", addr, "v4v6"}
	}
	return []string{"bind", addr}
}

// commonLogTargets are the log targets of every section when they all
// have the same, for defaults; none otherwise. The monitor and stats
// sections take theirs from defaults only (haproxycfg reads no `log` line
// in a listen section).
func commonLogTargets(cfg *lbconfig.Config) []lbconfig.LogTarget {
	var lists [][]lbconfig.LogTarget
	for _, fe := range cfg.Frontends {
		lists = append(lists, fe.LogTargets)
	}
	for _, m := range cfg.Monitors {
		lists = append(lists, m.LogTargets)
	}
	for _, s := range cfg.Stats {
		lists = append(lists, s.LogTargets)
	}
	for _, be := range cfg.Backends {
		lists = append(lists, be.LogTargets)
	}
	if len(lists) == 0 {
		return nil
	}
	for _, l := range lists[1:] {
		if !slices.Equal(l, lists[0]) {
			return nil
		}
	}
	return lists[0]
}

// bindTLSWords are an ssl bind's parameters: its crt and crt-list paths
// (the certificates are read from them again), ALPN, versions, ciphers.
func bindTLSWords(bd lbconfig.Bind) ([]string, error) {
	t := bd.TLS
	if t == nil {
		return nil, nil
	}
	if len(t.Crt) == 0 && len(t.CrtList) == 0 {
		return nil, fmt.Errorf("ssl bind %s has certificates but no crt or crt-list path to write (accepted: Crt or CrtList set)", bd.Addr)
	}
	words := []string{"ssl"}
	for _, c := range t.Crt {
		words = append(words, "crt", c)
	}
	for _, c := range t.CrtList {
		words = append(words, "crt-list", c)
	}
	if len(t.ALPN) > 0 {
		words = append(words, "alpn", strings.Join(t.ALPN, ","))
	}
	return append(words, tlsOptionWords(t.TLSOptions)...), nil
}

func tlsOptionWords(o lbconfig.TLSOptions) []string {
	var words []string
	if o.MinVersion != 0 {
		words = append(words, "ssl-min-ver", lbconfig.TLSVersionName(o.MinVersion))
	}
	if o.MaxVersion != 0 {
		words = append(words, "ssl-max-ver", lbconfig.TLSVersionName(o.MaxVersion))
	}
	if len(o.Ciphers) > 0 {
		names := make([]string, len(o.Ciphers))
		for i, id := range o.Ciphers {
			names[i] = lbconfig.CipherName(id)
		}
		words = append(words, "ciphers", strings.Join(names, ":"))
	}
	if o.NoTickets {
		words = append(words, "no-tls-tickets")
	}
	if o.PreferClientCiphers {
		words = append(words, "prefer-client-ciphers")
	}
	return words
}

// serverTLSWords are a server's ssl and TLS parameters.
func serverTLSWords(s lbconfig.Server) []string {
	var words []string
	if s.SSL {
		words = append(words, "ssl")
	}
	t := s.TLS
	if t == nil {
		return words
	}
	if t.CAFile != "" {
		words = append(words, "ca-file", t.CAFile)
	}
	if t.SNI != "" {
		words = append(words, "sni", "str("+t.SNI+")")
	}
	if len(t.ALPN) > 0 {
		words = append(words, "alpn", strings.Join(t.ALPN, ","))
	}
	return append(words, tlsOptionWords(t.TLSOptions)...)
}

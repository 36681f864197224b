package lbconfig

import (
	"maps"
	"slices"
	"strings"
	"time"
)

// TimeoutWarning is the warning about missing client, connect and server
// timeouts for a validated Config read from YAML, "" when none is missing.
// The haproxy.cfg reader warns per section in haproxy's words instead
// (haproxycfg's proxyWarnings), so Validate leaves it to the readers.
func TimeoutWarning(c *Config) string {
	v := &validator{c: c}
	missing := v.missingTimeouts()
	if len(missing) == 0 {
		return ""
	}
	v.warn(v.pos("defaults"), "", "timeout %s not set: such connections never time out "+
		"(haproxy warns about this too: set client, connect and server)", strings.Join(missing, ", "))
	return v.warnings[0]
}

// missingTimeouts names the timeouts (client, connect, server) some
// frontend runs without, taking each frontend's own and its backend's
// over defaults' (Config.Effective), as haproxy's "missing timeouts"
// warning does.
func (v *validator) missingTimeouts() []string {
	c := v.c
	var client, connect, server bool
	for i := range c.Frontends {
		f := &c.Frontends[i]
		var b *Backend
		for j := range c.Backends {
			if c.Backends[j].Name == f.Backend {
				b = &c.Backends[j]
			}
		}
		t := c.Effective(f, b)
		client = client || t.Client == 0
		connect = connect || t.Connect == 0
		server = server || t.Server == 0
	}
	var out []string
	for _, m := range []struct {
		name string
		miss bool
	}{{"client", client}, {"connect", connect}, {"server", server}} {
		if m.miss {
			out = append(out, m.name)
		}
	}
	return out
}

// more checks the settings added for issue 27 (see docs/haproxy-cfg.md).
func (v *validator) more() {
	c := v.c
	v.proxyIDs()
	v.externalChecks() // extcheck.go
	v.sticks()         // stick.go
	if c.UlimitN < 0 {
		v.fail(v.pos(ItemKey("global", "ulimit-n")), "global", "ulimit-n", "ulimit-n %d is negative (accepted: 1 or more, or 0 to keep the limit)", c.UlimitN)
	}
	if c.BufSize != 0 && (c.BufSize < MinBufSize || c.BufSize > MaxBufSize) {
		v.fail(v.pos(ItemKey("global", "tune.bufsize")), "global", "tune.bufsize", "tune.bufsize %d is out of range (accepted: %d..%d bytes, or 0 for %d)", c.BufSize, MinBufSize, MaxBufSize, DefaultBufSize)
	}
	if c.MaxRewrite != nil && (*c.MaxRewrite < 0 || *c.MaxRewrite > MaxBufSize) {
		v.fail(v.pos(ItemKey("global", "tune.maxrewrite")), "global", "tune.maxrewrite", "tune.maxrewrite %d is out of range (accepted: 0..%d bytes)", *c.MaxRewrite, MaxBufSize)
	}
	if c.SpreadChecks < 0 || c.SpreadChecks > 50 {
		v.fail(v.pos(ItemKey("global", "spread-checks")), "global", "spread-checks", "spread-checks %d is out of range (accepted: 0..50)", c.SpreadChecks)
	}
	if c.HardStopAfter < 0 {
		v.fail(v.pos(ItemKey("global", "hard-stop-after")), "global", "hard-stop-after", "hard-stop-after %s is negative", c.HardStopAfter)
	}
	neg := func(key string, t Timeouts) {
		for _, to := range []struct {
			name string
			d    time.Duration
		}{{"connect", t.Connect}, {"client", t.Client}, {"server", t.Server}, {"tunnel", t.Tunnel}, {"queue", t.Queue},
			{"check", t.Check}, {"client-fin", t.ClientFin}, {"server-fin", t.ServerFin}} {
			if to.d < 0 {
				v.fail(v.pos(ItemKey(key, "timeout "+to.name), key), key, "timeout",
					"timeout %s %s is negative (accepted: a positive duration, or 0 for none)", to.name, to.d)
			}
		}
	}
	for _, m := range c.Monitors {
		if err := listenLogFormat(m.Log); err != nil {
			v.fail(v.pos(ListenKey(m.Name)), ListenKey(m.Name), "log-format", "%v", err)
		}
	}
	for _, s := range c.Stats {
		if err := listenLogFormat(s.Log); err != nil {
			v.fail(v.pos(ListenKey(s.Name)), ListenKey(s.Name), "log-format", "%v", err)
		}
		neg(ListenKey(s.Name), s.Timeouts)
	}
	for i := range c.Frontends {
		f := &c.Frontends[i]
		key := FrontendKey(f.Name)
		neg(key, f.Timeouts)
		if f.MaxConn < 0 {
			v.fail(v.pos(ItemKey(key, "maxconn"), key), key, "maxconn", "maxconn %d is negative (accepted: 0 or more)", f.MaxConn)
		}
	}
	for i := range c.Backends {
		b := &c.Backends[i]
		key := BackendKey(b.Name)
		neg(key, b.Timeouts)
		if b.Retries < 0 {
			v.fail(v.pos(ItemKey(key, "retries"), key), key, "retries", "retries %d is negative (accepted: 1 or more)", b.Retries)
		}
		ids := map[int]string{}
		for j := range b.Servers {
			s := &b.Servers[j]
			pos := v.pos(ServerKey(b.Name, s.Name), key)
			field := key + ", server " + s.Name
			for _, n := range []struct {
				kw string
				v  int
			}{{"maxconn", s.MaxConn}, {"maxqueue", s.MaxQueue}, {"id", s.ID}} {
				if n.v < 0 {
					v.fail(pos, field, n.kw, "%s %d is negative (accepted: 0 or more)", n.kw, n.v)
				}
			}
			if s.CheckPort < 0 || s.CheckPort > 65535 {
				v.fail(pos, field, "port", "port %d is out of range (accepted: 1..65535)", s.CheckPort)
			}
			for _, d := range []struct {
				kw string
				d  time.Duration
			}{{"fastinter", s.FastInter}, {"downinter", s.DownInter}, {"slowstart", s.SlowStart}} {
				if d.d < 0 {
					v.fail(pos, field, d.kw, "%s %s is negative (accepted: a positive duration)", d.kw, d.d)
				}
			}
			if s.ID > 0 {
				if prev, dup := ids[s.ID]; dup {
					v.fail(pos, field, "id", "id %d is already the id of server %s (accepted: unique ids in a backend)", s.ID, prev)
				}
				ids[s.ID] = s.Name
			}
			if s.NoPort && s.Check && s.CheckPort == 0 && !slices.ContainsFunc(b.TCPCheck, func(r TCPCheckRule) bool { return r.Connect && r.Port != 0 }) {
				v.fail(pos, field, "server", "backend '%s': server '%s' has neither service port nor check port (accepted: ADDRESS:PORT, or port N for its checks)", b.Name, s.Name)
			}
			if s.Resolvers != "" && c.ResolversByName(s.Resolvers) == nil {
				v.fail(pos, field, "resolvers", "resolvers %q: no such resolvers section", s.Resolvers)
			}
			if s.Backup && j >= 64 {
				v.fail(pos, field, "backup", "backup server at position %d: vipstack takes backup servers among the first 64 servers of a backend (accepted: list backup servers earlier)", j+1)
			}
		}
	}
}

// proxyIDs checks the sections' own ids: positive, of a section, and not
// shared but by the frontend and backend a listen section becomes.
func (v *validator) proxyIDs() {
	order := v.c.ProxyOrder()
	keys := slices.Sorted(maps.Keys(v.c.ProxyIDs))
	seen := map[int]string{}
	for _, k := range keys {
		id := v.c.ProxyIDs[k]
		pos := v.pos(ItemKey(k, "id"), k)
		_, name, _ := strings.Cut(k, " ")
		switch {
		case !slices.Contains(order, k):
			v.fail(pos, k, "id", "id %d of %s: no such section (accepted: the key of a frontend, backend or listen section)", id, k)
		case id <= 0:
			v.fail(pos, k, "id", "custom id has to be > 0. (got %d)", id)
		case seen[id] != "" && seen[id] != FrontendKey(name) && seen[id] != BackendKey(name):
			v.fail(pos, k, "id", "%s reuses same custom id %d as %s (accepted: unique ids)", k, id, seen[id])
		}
		seen[id] = k
	}
}

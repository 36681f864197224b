package lb

import (
	"slices"
	"strconv"
	"strings"

	"github.com/vipstack/vipstack/internal/healthcheck"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// extCheck is what a server's external check runs with, as haproxy 2.6
// prepares it (prepare_external_check): comparable, so that a reload
// restarts the check only when it changes.
type extCheck struct {
	command, path                string
	proxyName, proxyID           string
	proxyAddr, proxyPort         string // the section's first bind; NOT_USED without one
	serverName, serverID         string
	serverAddr, serverPort       string
	serverMaxConn, ssl, protocol string
}

// extCheckOf is backend b's external check of its server at index i; the
// zero value without one. haproxy numbers a server by its id, else its
// place; the section by ProxyNumbers. The address and port are those of
// the section's first bind when it is a listen (a backend has none).
func extCheckOf(cfg *lbconfig.Config, b lbconfig.Backend, i int) extCheck {
	x := b.ExternalCheck
	if x == nil {
		return extCheck{}
	}
	s := b.Servers[i]
	ids := haproxyNumbers(cfg)
	e := extCheck{command: x.Command, path: x.Path, proxyName: b.Name, proxyAddr: "NOT_USED", proxyPort: "NOT_USED",
		serverName: s.Name, serverID: strconv.Itoa(i + 1), serverMaxConn: strconv.Itoa(s.MaxConn), ssl: "0", protocol: "tcp"}
	id, listen := ids[lbconfig.ListenKey(b.Name)]
	if !listen {
		id = ids[lbconfig.BackendKey(b.Name)]
	}
	e.proxyID = strconv.Itoa(id)
	if listen {
		for _, f := range cfg.Frontends {
			if f.Name == b.Name && len(f.Binds) > 0 {
				a := f.Binds[0].Addr
				e.proxyAddr, e.proxyPort = a.Addr().String(), strconv.Itoa(int(a.Port()))
				break
			}
		}
	}
	if s.ID > 0 {
		e.serverID = strconv.Itoa(s.ID)
	}
	e.serverAddr = s.Addr.Addr().String()
	if !s.NoPort {
		e.serverPort = strconv.Itoa(int(s.Addr.Port()))
	}
	if s.SSL {
		e.ssl = "1"
	}
	if b.HTTP != nil {
		e.protocol = "h1"
	}
	return e
}

// externalProber runs s's external check: haproxy's arguments and
// environment, and nothing else of vipstack's environment.
func (s *server) externalProber(e extCheck) healthcheck.External {
	// haproxy passes "" where the arguments say NOT_USED.
	env := func(v string) string {
		if v == "NOT_USED" {
			return ""
		}
		return v
	}
	return healthcheck.External{
		Command: e.command,
		Args:    []string{e.proxyAddr, e.proxyPort, e.serverAddr, e.serverPort},
		Env: func() []string {
			return []string{
				"PATH=" + e.path,
				"HAPROXY_PROXY_NAME=" + e.proxyName,
				"HAPROXY_PROXY_ID=" + e.proxyID,
				"HAPROXY_PROXY_ADDR=" + env(e.proxyAddr),
				"HAPROXY_PROXY_PORT=" + env(e.proxyPort),
				"HAPROXY_SERVER_NAME=" + e.serverName,
				"HAPROXY_SERVER_ID=" + e.serverID,
				"HAPROXY_SERVER_ADDR=" + e.serverAddr,
				"HAPROXY_SERVER_PORT=" + e.serverPort,
				"HAPROXY_SERVER_MAXCONN=" + e.serverMaxConn,
				"HAPROXY_SERVER_CURCONN=" + strconv.FormatInt(s.cur.Load(), 10),
				"HAPROXY_SERVER_SSL=" + e.ssl,
				"HAPROXY_SERVER_PROTO=" + e.protocol,
			}
		},
	}
}

// haproxyNumbers numbers the sections as haproxy 2.6 does
// (lbconfig.Config.ProxyNumbers), a listen that forwards being one proxy
// where the model has a frontend and a backend of its name (its Source
// keeps the listen's key).
func haproxyNumbers(cfg *lbconfig.Config) map[string]int {
	c := *cfg
	c.Proxies, c.ProxyIDs = nil, map[string]int{}
	for _, k := range cfg.ProxyOrder() {
		kind, name, _ := strings.Cut(k, " ")
		key := k
		if _, listen := cfg.Source[lbconfig.ListenKey(name)]; listen && (kind == "frontend" || kind == "backend") {
			key = lbconfig.ListenKey(name)
		}
		if !slices.Contains(c.Proxies, key) {
			c.Proxies = append(c.Proxies, key)
		}
		if id, ok := cfg.ProxyIDs[k]; ok {
			c.ProxyIDs[key] = id
		}
	}
	return c.ProxyNumbers()
}

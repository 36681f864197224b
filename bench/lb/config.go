package main

import (
	"fmt"
	"strings"
)

// Ports in the benchmark's namespace. Everything listens on loopback below
// the namespace's ephemeral port range (set to 16000-65000 so tens of
// thousands of short connections do not run out of ports).
const (
	backendBasePort = 8081 // backends b1..b3 on 8081..8083
	iperfPort       = 5201
	numBackends     = 3
)

// lbPorts are one balancer's listening ports: the frontends differ between
// haproxy and vipstack; everything else in the configuration is the same.
type lbPorts struct {
	Main, Bulk, Monitor, Stats int
}

// portsFor returns the ports of implHAProxy or implVipstack.
func portsFor(impl string) lbPorts {
	if impl == implHAProxy {
		return lbPorts{Main: 9445, Bulk: 9446, Monitor: 9447, Stats: 9448}
	}
	return lbPorts{Main: 9545, Bulk: 9546, Monitor: 9547, Stats: 9548}
}

// renderConfig returns the haproxy.cfg both balancers run: seed 000's file
// with its ports and addresses changed, plus a second frontend and backend
// for the bulk-throughput test (an iperf3 server, no health check, as
// haproxy treats a server without `check` as always up). Differences from
// the seed, each for the benchmark's sake:
//   - servers are plain HTTP on loopback, so `verify none` and `check-ssl`
//     are gone (the check is still `option httpchk GET /readyz HTTP/1.0`);
//   - `maxconn` is 4000, not 20000: haproxy's global limit is set to 8000
//     on its command line (-n) because this machine's open-file limit is
//     20000 and haproxy needs two descriptors per connection;
//   - no `log` line: there is no syslog socket in the namespace, and the
//     `stats socket` lives in the work directory.
//
// With httpMode (bench/lb -mode http), the main frontend and its backend
// are `mode http` (the HTTP reverse proxy, keep-alive on both sides);
// the bulk frontend stays TCP.
func renderConfig(p lbPorts, statsSocket string, httpMode bool) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("global")
	w("  stats socket %s  mode 600 level admin expose-fd listeners", statsSocket)
	w("defaults")
	w("  maxconn 4000")
	w("  mode    tcp")
	w("  option  dontlognull")
	w("  retries 3")
	w("  timeout http-request 30s")
	w("  timeout queue        1m")
	w("  timeout connect      10s")
	w("  timeout client       86400s")
	w("  timeout server       86400s")
	w("  timeout tunnel       86400s")
	w("frontend  main")
	w("  bind :::%d v4v6", p.Main)
	if httpMode {
		w("  mode http")
	}
	w("  default_backend masters")
	w("frontend  bulk")
	w("  bind :::%d v4v6", p.Bulk)
	w("  default_backend iperf")
	w("listen health_check_http_url")
	w("  bind :::%d v4v6", p.Monitor)
	w("  mode http")
	w("  monitor-uri /haproxy_ready")
	w("  option dontlognull")
	w("listen stats")
	w("  bind localhost:%d", p.Stats)
	w("  mode http")
	w("  stats enable")
	w("  stats hide-version")
	w("  stats uri /haproxy_stats")
	w("  stats refresh 30s")
	w("  stats auth Username:Password")
	w("backend masters")
	if httpMode {
		w("   mode http")
	}
	w("   option  httpchk GET /readyz HTTP/1.0")
	w("   option  log-health-checks")
	w("   balance roundrobin")
	for i := 1; i <= numBackends; i++ {
		w("   server b%d 127.0.0.1:%d weight 1 check inter 1s fall 2 rise 3", i, backendBasePort+i-1)
	}
	w("backend iperf")
	w("   balance roundrobin")
	w("   server i1 127.0.0.1:%d weight 1", iperfPort)
	return b.String()
}

// validPrefix says whether p can start a namespace name here: 1 to 4
// ASCII letters or digits (testnet appends a random hex tag, and
// interface names derived from it must stay under 16 bytes).
func validPrefix(p string) bool {
	if len(p) < 1 || len(p) > 4 {
		return false
	}
	for _, r := range p {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return false
		}
	}
	return true
}

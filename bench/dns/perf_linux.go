package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/testnet"
)

// Ports of the three servers, on 127.0.0.1 inside host 1's namespace.
const (
	clusterPort  = 5301
	templatePort = 5302
	stockPort    = 5303
)

// clusterCorefile serves the cluster zone with clusterdns.
const clusterCorefile = `.:5301 {
    bind 127.0.0.1
    clusterdns managed.example.com {
        api 198.18.0.5 fd00:bb::5
        ingress 198.18.0.7
        node master-0 master 198.18.0.11 fd00:bb::11
        node master-1 master 198.18.0.12 fd00:bb::12
        node master-2 master 198.18.0.13 fd00:bb::13
        node worker-0 worker 198.18.0.21
        node worker-1 worker 198.18.0.22
    }
}
`

// templateCorefile serves the same answers with CoreDNS's template and hosts
// plugins, the way the seeds do (plus the etcd records the seeds got from
// mDNS, and the SOA that makes NODATA cacheable).
const templateCorefile = `.:5302 {
    bind 127.0.0.1
    template IN A managed.example.com {
        match "^(api|api-int)\.managed\.example\.com\.$"
        answer "{{ .Name }} 60 IN A 198.18.0.5"
        fallthrough
    }
    template IN AAAA managed.example.com {
        match "^(api|api-int)\.managed\.example\.com\.$"
        answer "{{ .Name }} 60 IN AAAA fd00:bb::5"
        fallthrough
    }
    template IN A managed.example.com {
        match "^.+\.apps\.managed\.example\.com\.$"
        answer "{{ .Name }} 60 IN A 198.18.0.7"
        fallthrough
    }
    template IN AAAA managed.example.com {
        match "^.+\.apps\.managed\.example\.com\.$"
        authority "managed.example.com. 60 IN SOA ns.managed.example.com. hostmaster.managed.example.com. 1 7200 1800 86400 60"
        fallthrough
    }
    template IN SRV managed.example.com {
        match "^_etcd-server-ssl\._tcp\.managed\.example\.com\.$"
        answer "{{ .Name }} 60 IN SRV 0 10 2380 etcd-0.managed.example.com."
        answer "{{ .Name }} 60 IN SRV 0 10 2380 etcd-1.managed.example.com."
        answer "{{ .Name }} 60 IN SRV 0 10 2380 etcd-2.managed.example.com."
        additional "etcd-0.managed.example.com. 60 IN A 198.18.0.11"
        additional "etcd-0.managed.example.com. 60 IN AAAA fd00:bb::11"
        additional "etcd-1.managed.example.com. 60 IN A 198.18.0.12"
        additional "etcd-1.managed.example.com. 60 IN AAAA fd00:bb::12"
        additional "etcd-2.managed.example.com. 60 IN A 198.18.0.13"
        additional "etcd-2.managed.example.com. 60 IN AAAA fd00:bb::13"
        fallthrough
    }
    hosts {
        198.18.0.11 master-0 master-0.managed.example.com etcd-0.managed.example.com
        fd00:bb::11 master-0 master-0.managed.example.com etcd-0.managed.example.com
        198.18.0.12 master-1 master-1.managed.example.com etcd-1.managed.example.com
        fd00:bb::12 master-1 master-1.managed.example.com etcd-1.managed.example.com
        198.18.0.13 master-2 master-2.managed.example.com etcd-2.managed.example.com
        fd00:bb::13 master-2 master-2.managed.example.com etcd-2.managed.example.com
        198.18.0.21 worker-0 worker-0.managed.example.com
        198.18.0.22 worker-1 worker-1.managed.example.com
        ttl 60
        no_reverse
    }
}
`

// queryMix is dnsperf's input: every record kind, NODATA included, in the
// proportions a cluster might see them (the apps names most often).
var queryMix = []string{
	"api.managed.example.com A",
	"api-int.managed.example.com A",
	"api.managed.example.com AAAA",
	"console-openshift-console.apps.managed.example.com A",
	"oauth-openshift.apps.managed.example.com A",
	"downloads-openshift-console.apps.managed.example.com A",
	"console-openshift-console.apps.managed.example.com AAAA",
	"master-0.managed.example.com A",
	"master-1.managed.example.com AAAA",
	"worker-0.managed.example.com A",
	"worker-1 A",
	"etcd-2.managed.example.com A",
	"_etcd-server-ssl._tcp.managed.example.com SRV",
}

// server is one DNS server process: `vipstack dns` with the clusterdns or
// the template Corefile, or stock CoreDNS with the template Corefile.
type server struct {
	name string
	port int
	proc *proc
}

// startPerfServers starts the three servers in h, pinned to b.serverCPU
// (-1: not pinned).
func startPerfServers(b *bench, h *testnet.Host) ([]*server, error) {
	var out []*server
	stop := func() {
		for _, s := range out {
			s.proc.stop()
		}
	}
	for _, s := range []struct {
		name     string
		port     int
		corefile string
	}{
		{nameCluster, clusterPort, clusterCorefile},
		{nameTemplate, templatePort, templateCorefile},
		{nameStock, stockPort, strings.Replace(templateCorefile, ".:5302 {", ".:5303 {", 1)},
	} {
		path := filepath.Join(b.dir, strings.ReplaceAll(s.name, " ", "-")+".Corefile")
		if err := os.WriteFile(path, []byte(s.corefile), 0o644); err != nil {
			stop()
			return nil, err
		}
		var p *proc
		var err error
		if s.name == nameStock {
			p, err = startCoreDNS(b, h, b.serverCPU, path, s.port)
		} else {
			p, err = startVipstack(b, h, b.serverCPU, "dns", "-conf", path)
		}
		if err != nil {
			stop()
			return nil, fmt.Errorf("%s server: %w", s.name, err)
		}
		out = append(out, &server{name: s.name, port: s.port, proc: p})
	}
	return out, nil
}

// sameAnswers asks every server every query of the mix and compares the
// responses with clusterdns's (rcode and all three sections, TTLs
// included).
func sameAnswers(h *testnet.Host, servers []*server) ([]string, error) {
	var diffs []string
	for _, q := range queryMix {
		f := strings.Fields(q)
		got := make([]string, len(servers))
		for i, s := range servers {
			r, err := exchange(h, net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)), f[0], dns.StringToType[f[1]])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.name, err)
			}
			got[i] = render(r)
		}
		for i := 1; i < len(servers); i++ {
			if got[i] != got[0] {
				diffs = append(diffs, fmt.Sprintf("%s:\n  %s: %s\n  %s: %s", q, servers[0].name, got[0], servers[i].name, got[i]))
			}
		}
	}
	return diffs, nil
}

// rotate returns servers in the order of round r: each round starts with
// the next server, so all of them see the same machine load on average.
func rotate(servers []*server, r int) []*server {
	n := len(servers)
	out := make([]*server, n)
	for i := range servers {
		out[i] = servers[(i+r)%n]
	}
	return out
}

// exchange sends one query from inside h's namespace.
func exchange(h *testnet.Host, addr, name string, qtype uint16) (*dns.Msg, error) {
	var r *dns.Msg
	err := h.Do(func() error {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), qtype)
		var err error
		r, err = dns.Exchange(m, addr)
		return err
	})
	return r, err
}

// render prints a response's rcode and sections in a canonical order.
func render(r *dns.Msg) string {
	sec := func(rrs []dns.RR) string {
		var s []string
		for _, rr := range rrs {
			s = append(s, strings.Join(strings.Fields(rr.String()), " "))
		}
		slices.Sort(s)
		return "[" + strings.Join(s, "; ") + "]"
	}
	return fmt.Sprintf("%s answer=%s authority=%s additional=%s", dns.RcodeToString[r.Rcode], sec(r.Answer), sec(r.Ns), sec(r.Extra))
}

// dnsperf runs one dnsperf in h against port.
func dnsperf(b *bench, h *testnet.Host, port int, extra ...string) (perf, error) {
	args := []string{"-s", "127.0.0.1", "-p", strconv.Itoa(port), "-d", b.queryFile,
		"-l", strconv.Itoa(b.o.seconds), "-c", "1", "-q", "100", "-t", "2"}
	args = append(args, extra...)
	c := pinned(h, b.clientCPU, "dnsperf", args...)
	out, err := c.CombinedOutput()
	if err != nil {
		return perf{}, fmt.Errorf("dnsperf %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if b.o.verbose {
		fmt.Fprintf(b.stderr, "%s", out)
	}
	return parseDNSPerf(string(out))
}

// runPerf measures every server in both phases, rotating which goes
// first in each round.
func runPerf(b *bench, h *testnet.Host, servers []*server) ([]phase, error) {
	phases := []phase{
		{Name: "throughput (unthrottled)", Args: fmt.Sprintf("-Q %d", b.o.maxQPS)},
		{Name: fmt.Sprintf("latency at %d qps", b.o.rate), Args: fmt.Sprintf("-Q %d", b.o.rate), Fixed: true},
	}
	for i := range phases {
		ph := &phases[i]
		ph.Runs = map[string][]perf{}
		for round := 0; round < b.o.rounds; round++ {
			for _, s := range rotate(servers, round) {
				start := time.Now()
				p, err := dnsperf(b, h, s.port, strings.Fields(ph.Args)...)
				if err != nil {
					return nil, err
				}
				b.logf("%s round %d %s: %.0f qps, %s us average, %d lost (%.1fs)", ph.Name, round+1, s.name, p.QPS, us(p.Latency), p.Lost, time.Since(start).Seconds())
				ph.Runs[s.name] = append(ph.Runs[s.name], p)
			}
		}
	}
	return phases, nil
}

// probeRTT sends n queries of the mix to each of ports, one query at a
// time (the next one a pause after the answer), the ports taking turns
// query by query in the order given, from a thread in h's namespace,
// pinned to cpu unless cpu < 0. It returns every round-trip time, per
// port. Taking turns puts every server under the same moments of a
// shared machine: measured one after the other, a server's p99 was
// mostly the load of the seconds it happened to be measured in. Unlike
// dnsperf's average, the percentiles are not dominated by the rare long
// stall such a machine causes.
func probeRTT(h *testnet.Host, cpu int, ports []int, n int, pause time.Duration) ([][]time.Duration, error) {
	msgs := make([]*dns.Msg, len(queryMix))
	for i, q := range queryMix {
		f := strings.Fields(q)
		msgs[i] = new(dns.Msg).SetQuestion(dns.Fqdn(f[0]), dns.StringToType[f[1]])
	}
	rtts := make([][]time.Duration, len(ports))
	err := h.Do(func() error {
		// Do runs on a locked thread that is retired afterwards, so the
		// affinity does not leak to the rest of the program.
		if cpu >= 0 {
			var set unix.CPUSet
			set.Set(cpu)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				return fmt.Errorf("pin prober: %w", err)
			}
		}
		conns := make([]*dns.Conn, len(ports))
		for k, port := range ports {
			c, err := net.Dial("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				return err
			}
			defer c.Close()
			conns[k] = &dns.Conn{Conn: c}
			rtts[k] = make([]time.Duration, 0, n)
		}
		for i := 0; i < n; i++ {
			m := msgs[i%len(msgs)]
			for k, conn := range conns {
				rtt, err := exchangeOne(conn, m)
				if err != nil {
					return fmt.Errorf("port %d, query %d (%s): %w", ports[k], i, queryMix[i%len(queryMix)], err)
				}
				rtts[k] = append(rtts[k], rtt)
				time.Sleep(pause)
			}
		}
		return nil
	})
	return rtts, err
}

// exchangeOne sends m on conn with a fresh ID and returns the time until
// its answer.
func exchangeOne(conn *dns.Conn, m *dns.Msg) (time.Duration, error) {
	m.Id = dns.Id()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	t0 := time.Now()
	if err := conn.WriteMsg(m); err != nil {
		return 0, err
	}
	for {
		r, err := conn.ReadMsg()
		if err != nil {
			return 0, err
		}
		if r.Id == m.Id {
			return time.Since(t0), nil
		}
	}
}

// runProbe measures every server with probeRTT, all of them in one
// sequence per round, rotating which takes the first turn.
func runProbe(b *bench, h *testnet.Host, servers []*server) (rttPhase, error) {
	ph := rttPhase{N: b.o.probeN, Pause: b.o.probePause, Runs: map[string][][3]time.Duration{}, All: map[string][3]time.Duration{}}
	all := map[string][]time.Duration{}
	for round := 0; round < b.o.rounds; round++ {
		order := rotate(servers, round)
		ports := make([]int, len(order))
		for i, s := range order {
			ports[i] = s.port
		}
		rtts, err := probeRTT(h, b.clientCPU, ports, b.o.probeN, b.o.probePause)
		if err != nil {
			return ph, err
		}
		for i, s := range order {
			q := quantiles(rtts[i])
			b.logf("rtt round %d %s: p50 %s p90 %s p99 %s us", round+1, s.name, us(q[0]), us(q[1]), us(q[2]))
			ph.Runs[s.name] = append(ph.Runs[s.name], q)
			all[s.name] = append(all[s.name], rtts[i]...)
		}
	}
	for name, rtts := range all {
		ph.All[name] = quantiles(rtts)
	}
	return ph, nil
}

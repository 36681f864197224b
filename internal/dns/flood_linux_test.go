package dns

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/testnet"
)

// floodCorefile serves the cluster zone on 127.0.0.1:5300 with the health
// endpoint on 127.0.0.1:18080: what TestDNSFlood floods and probes.
const floodCorefile = `.:5300 {
    bind 127.0.0.1
    health 127.0.0.1:18080
    clusterdns managed.example.com {
        api 198.18.0.5
        ingress 198.18.0.7
        node master-0 master 198.18.0.11
        node master-1 master 198.18.0.12
        node master-2 master 198.18.0.13
    }
}
`

// floodQueries is dnsperf's query file: names clusterdns answers.
const floodQueries = `api.managed.example.com A
api-int.managed.example.com A
console.apps.managed.example.com A
master-0.managed.example.com A
_etcd-server-ssl._tcp.managed.example.com SRV
etcd-1.managed.example.com A
`

// Bounds of the flood: dnsperf runs for floodSeconds at most floodQPS.
const (
	floodSeconds = 5
	floodQPS     = 10000
)

// floodProbeTimeout bounds one health request or real query: a request that has
// no answer by then failed (a correctness bound, not a latency target).
const floodProbeTimeout = 5 * time.Second

// healthGet does GET /health on 127.0.0.1:18080 in h.
func healthGet(h *testnet.Host) error {
	var c net.Conn
	if err := h.Do(func() (err error) {
		c, err = net.DialTimeout("tcp", "127.0.0.1:18080", floodProbeTimeout)
		return err
	}); err != nil {
		return fmt.Errorf("dial health: %w", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(floodProbeTimeout))
	if _, err := io.WriteString(c, "GET /health HTTP/1.0\r\nHost: localhost\r\n\r\n"); err != nil {
		return fmt.Errorf("GET /health: %w", err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		return fmt.Errorf("GET /health: %w", err)
	}
	if !strings.HasPrefix(string(b), "HTTP/1.0 200 OK") || !strings.HasSuffix(string(b), "\r\n\r\nOK") {
		return fmt.Errorf("GET /health answered %q, want 200 OK", b)
	}
	return nil
}

// realQuery asks for name's A record over TCP (a lost datagram under the
// flood would not be the server's failure) and checks the answer.
func realQuery(h *testnet.Host, name, want string) error {
	var c net.Conn
	if err := h.Do(func() (err error) {
		c, err = net.DialTimeout("tcp", "127.0.0.1:5300", floodProbeTimeout)
		return err
	}); err != nil {
		return fmt.Errorf("dial DNS: %w", err)
	}
	conn := &dns.Conn{Conn: c}
	defer conn.Close()
	c.SetDeadline(time.Now().Add(floodProbeTimeout))
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	if err := conn.WriteMsg(m); err != nil {
		return fmt.Errorf("query %s: %w", name, err)
	}
	r, err := conn.ReadMsg()
	if err != nil {
		return fmt.Errorf("query %s: %w", name, err)
	}
	if len(r.Answer) != 1 {
		return fmt.Errorf("query %s: rcode %s, %d answers, want 1", name, dns.RcodeToString[r.Rcode], len(r.Answer))
	}
	a, ok := r.Answer[0].(*dns.A)
	if !ok || a.A.String() != want {
		return fmt.Errorf("query %s: answer %v, want A %s", name, r.Answer[0], want)
	}
	return nil
}

var dnsperfQPS = regexp.MustCompile(`Queries per second:\s+([0-9.]+)`)

// TestDNSFlood: `vipstack dns` in a namespace gets dnsperf's flood on
// loopback (-l 5 -Q 10000, the cluster zone's names) while the test sends
// a health request every 50 ms and a real query over TCP every 100 ms.
// Asserted: every health request in the window answers 200 OK and every
// real query the right address, each within floodProbeTimeout; dnsperf got
// answers (it ran against a live server).
func TestDNSFlood(t *testing.T) {
	testnet.RequireRoot(t)
	perf, err := exec.LookPath("dnsperf")
	if err != nil {
		t.Skip("skipping: needs dnsperf (apt-get install dnsperf)")
	}
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vfd"})
	h := topo.Hosts[0]
	p := startDNS(t, h, floodCorefile)
	if err := healthGet(h); err != nil {
		t.Fatalf("before the flood: %v", err)
	}
	qfile := filepath.Join(t.TempDir(), "queries")
	if err := os.WriteFile(qfile, []byte(floodQueries), 0o644); err != nil {
		t.Fatal(err)
	}

	cmd := h.Command(perf, "-s", "127.0.0.1", "-p", "5300", "-d", qfile, "-l", fmt.Sprint(floodSeconds),
		"-Q", fmt.Sprint(floodQPS), "-c", "4", "-t", "2")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := h.Start(cmd); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	type probe struct {
		what string
		err  error
	}
	var (
		mu     sync.Mutex
		probes []probe
		wg     sync.WaitGroup
	)
	stop := make(chan struct{})
	loop := func(every time.Duration, what string, f func() error) {
		defer wg.Done()
		tick := time.NewTicker(every) // probing period
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			err := f()
			mu.Lock()
			probes = append(probes, probe{what: what, err: err})
			mu.Unlock()
		}
	}
	wg.Add(2)
	go loop(50*time.Millisecond, "health", func() error { return healthGet(h) })
	names := []struct{ name, want string }{
		{"api.managed.example.com", "198.18.0.5"},
		{"console.apps.managed.example.com", "198.18.0.7"},
		{"master-2.managed.example.com", "198.18.0.13"},
	}
	n := 0
	go loop(100*time.Millisecond, "query", func() error {
		q := names[n%len(names)]
		n++
		return realQuery(h, q.name, q.want)
	})
	var perfErr error
	select {
	case perfErr = <-done:
	case <-time.After(floodSeconds*time.Second + 30*time.Second):
		perfErr = fmt.Errorf("dnsperf still running %ds after its -l %d", 30, floodSeconds)
	}
	close(stop)
	wg.Wait()
	if perfErr != nil {
		t.Fatalf("dnsperf: %v\n%s", perfErr, out.String())
	}

	counts := map[string]int{}
	var failed []string
	for _, pr := range probes {
		counts[pr.what]++
		if pr.err != nil {
			failed = append(failed, pr.what+": "+pr.err.Error())
		}
	}
	qps := "?"
	if m := dnsperfQPS.FindStringSubmatch(out.String()); m != nil {
		qps = m[1]
	}
	t.Logf("dnsperf served %s queries/s; %d health requests and %d real queries during the flood", qps, counts["health"], counts["query"])
	if len(failed) > 0 {
		t.Errorf("%d of %d requests during the flood failed, first: %s", len(failed), len(probes), failed[0])
	}
	if counts["health"] < 10 || counts["query"] < 5 {
		t.Errorf("only %d health requests and %d queries during the flood: the window was not covered", counts["health"], counts["query"])
	}
	if !strings.Contains(out.String(), "Queries completed:") || qps == "?" || qps == "0.000000" {
		t.Errorf("dnsperf did not report answered queries:\n%s", out.String())
	}
	p.stop(t)
}

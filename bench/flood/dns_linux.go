package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// dnsCorefile is what `vipstack dns` serves (as internal/dns's
// TestDNSFlood runs it).
const dnsCorefile = `.:5300 {
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

const dnsQueries = `api.managed.example.com A
api-int.managed.example.com A
console.apps.managed.example.com A
master-0.managed.example.com A
_etcd-server-ssl._tcp.managed.example.com SRV
etcd-1.managed.example.com A
`

// probeTimeout bounds one probe: past it, the probe failed.
const probeTimeout = 5 * time.Second

var (
	perfQPS       = regexp.MustCompile(`Queries per second:\s+([0-9.]+)`)
	perfCompleted = regexp.MustCompile(`Queries completed:\s+(.+)`)
	perfLost      = regexp.MustCompile(`Queries lost:\s+(.+)`)
)

// prober sends health requests and real queries from inside a namespace:
// its loops run on threads switched into it, so the figures hold no
// namespace switching.
type prober struct {
	mu                   sync.Mutex
	idle                 bool
	idleLat, floodLat    []time.Duration
	health, healthFailed int
	queries, queryFailed int
	firstErr             error
}

func (p *prober) record(health bool, d time.Duration, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil && p.firstErr == nil {
		p.firstErr = err
	}
	if !health {
		if !p.idle {
			p.queries++
			if err != nil {
				p.queryFailed++
			}
		}
		return
	}
	switch {
	case p.idle && err == nil:
		p.idleLat = append(p.idleLat, d)
	case !p.idle:
		p.health++
		if err != nil {
			p.healthFailed++
		} else {
			p.floodLat = append(p.floodLat, d)
		}
	}
}

func healthOnce() error {
	c, err := net.DialTimeout("tcp", "127.0.0.1:18080", probeTimeout)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(probeTimeout))
	if _, err := io.WriteString(c, "GET /health HTTP/1.0\r\nHost: localhost\r\n\r\n"); err != nil {
		return err
	}
	b, err := io.ReadAll(c)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(string(b), "HTTP/1.0 200 OK") {
		return fmt.Errorf("GET /health answered %q", b)
	}
	return nil
}

func queryOnce(name, want string) error {
	c := &dns.Client{Net: "tcp", Timeout: probeTimeout}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	r, _, err := c.Exchange(m, "127.0.0.1:5300")
	if err != nil {
		return err
	}
	if len(r.Answer) != 1 {
		return fmt.Errorf("%s: %d answers", name, len(r.Answer))
	}
	if a, ok := r.Answer[0].(*dns.A); !ok || a.A.String() != want {
		return fmt.Errorf("%s: answer %v, want %s", name, r.Answer[0], want)
	}
	return nil
}

// loop runs f every period inside h until stop closes.
func loop(h *testnet.Host, period time.Duration, stop <-chan struct{}, wg *sync.WaitGroup, f func()) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.Do(func() error {
			tick := time.NewTicker(period)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return nil
				case <-tick.C:
					f()
				}
			}
		})
	}()
}

func (b *bench) dns(o options) (dnsFigures, error) {
	var f dnsFigures
	b.say("dns: building a namespace")
	topo, err := b.topology(testnet.Options{Hosts: 1, Prefix: "vf"})
	if err != nil {
		return f, err
	}
	h := topo.Hosts[0]
	dir := filepath.Join(b.work, "dns")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return f, err
	}
	cf, qf := filepath.Join(dir, "Corefile"), filepath.Join(dir, "queries")
	if err := os.WriteFile(cf, []byte(dnsCorefile), 0o644); err != nil {
		return f, err
	}
	if err := os.WriteFile(qf, []byte(dnsQueries), 0o644); err != nil {
		return f, err
	}
	n, err := peers.StartCmd(h, h.Command(b.bin, "dns", "-conf", cf))
	if err != nil {
		return f, err
	}
	b.atClose(func() {
		if n.Alive() {
			n.Kill()
		}
	})
	defer n.Term()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(n.Log(), "vipstack dns: serving"); {
		if !n.Alive() || time.Now().After(deadline) {
			return f, fmt.Errorf("vipstack dns did not serve within 30 s\n%s", tailLog(n.Log()))
		}
		time.Sleep(50 * time.Millisecond) // polling the process's output
	}

	p := &prober{idle: true}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	names := [][2]string{{"api.managed.example.com", "198.18.0.5"}, {"console.apps.managed.example.com", "198.18.0.7"}, {"master-2.managed.example.com", "198.18.0.13"}}
	i := 0
	loop(h, 20*time.Millisecond, stop, &wg, func() {
		start := time.Now()
		err := healthOnce()
		p.record(true, time.Since(start), err)
	})
	loop(h, 100*time.Millisecond, stop, &wg, func() {
		q := names[i%len(names)]
		i++
		p.record(false, 0, queryOnce(q[0], q[1]))
	})
	b.say("dns: probing idle for 3 s")
	time.Sleep(3 * time.Second) // the idle window
	p.mu.Lock()
	p.idle = false
	p.mu.Unlock()
	b.say("dns: dnsperf -l %d -Q %d", o.dnsSeconds, o.dnsQPS)
	out, perr := h.Run("dnsperf", "-s", "127.0.0.1", "-p", "5300", "-d", qf, "-l", fmt.Sprint(o.dnsSeconds), "-Q", fmt.Sprint(o.dnsQPS), "-c", "4", "-t", "2")
	close(stop)
	wg.Wait()
	if perr != nil {
		return f, fmt.Errorf("dnsperf: %w", perr)
	}
	if m := perfQPS.FindStringSubmatch(out); m != nil {
		fmt.Sscan(m[1], &f.QPS)
	}
	if m := perfCompleted.FindStringSubmatch(out); m != nil {
		f.Completed = strings.TrimSpace(m[1])
	}
	if m := perfLost.FindStringSubmatch(out); m != nil {
		f.Lost = strings.TrimSpace(m[1])
	}
	f.Health, f.HealthFailed, f.Queries, f.QueryFailed = p.health, p.healthFailed, p.queries, p.queryFailed
	f.IdleP50, f.IdleP99 = percentile(p.idleLat, 50), percentile(p.idleLat, 99)
	f.P50, f.P99 = percentile(p.floodLat, 50), percentile(p.floodLat, 99)
	if p.firstErr != nil {
		b.say("dns: first failed probe: %v", p.firstErr)
	}
	return f, nil
}

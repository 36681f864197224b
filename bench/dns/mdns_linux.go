package main

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/testnet"
)

const (
	mdnsCluster = "bench"
	srvName     = "_etcd-server-ssl._tcp.managed.example.com."
	// waitChange bounds each wait for the SRV answer to change; a leave
	// that missed its goodbye takes the record TTL (15 s) to show.
	waitChange = 30 * time.Second
)

// sniffer timestamps the first mDNS response from one address that carries
// records with a non-zero TTL (an announcement) and the first with TTL 0
// (a goodbye), since the last reset.
type sniffer struct {
	from netip.Addr
	conn *net.UDPConn

	mu                sync.Mutex
	announce, goodbye time.Time
}

func newSniffer(h *testnet.Host, from netip.Addr) (*sniffer, error) {
	s := &sniffer{from: from}
	err := h.Do(func() error {
		ifi, err := net.InterfaceByName(h.Link)
		if err != nil {
			return err
		}
		s.conn, err = net.ListenMulticastUDP("udp4", ifi, &net.UDPAddr{IP: net.IPv4(224, 0, 0, 251), Port: 5353})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("mDNS listener: %w", err)
	}
	go s.loop()
	return s, nil
}

func (s *sniffer) loop() {
	buf := make([]byte, 9000)
	for {
		n, from, err := s.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		now := time.Now()
		if from.Addr().Unmap() != s.from {
			continue
		}
		m := new(dns.Msg)
		if m.Unpack(buf[:n]) != nil || !m.Response {
			continue
		}
		live, bye := false, false
		for _, rr := range append(append([]dns.RR{}, m.Answer...), m.Extra...) {
			if rr.Header().Rrtype == dns.TypeOPT || rr.Header().Rrtype == dns.TypeNSEC {
				continue
			}
			if rr.Header().Ttl == 0 {
				bye = true
			} else {
				live = true
			}
		}
		s.mu.Lock()
		if live && s.announce.IsZero() {
			s.announce = now
		}
		if bye && s.goodbye.IsZero() {
			s.goodbye = now
		}
		s.mu.Unlock()
	}
}

func (s *sniffer) reset() {
	s.mu.Lock()
	s.announce, s.goodbye = time.Time{}, time.Time{}
	s.mu.Unlock()
}

func (s *sniffer) times() (announce, goodbye time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.announce, s.goodbye
}

func (s *sniffer) close() { s.conn.Close() }

// prober asks one DNS server for the etcd SRV record.
type prober struct {
	conn  *dns.Conn
	every time.Duration
}

func newProber(h *testnet.Host, addr string, every time.Duration) (*prober, error) {
	var c net.Conn
	err := h.Do(func() (err error) {
		c, err = net.Dial("udp", addr)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &prober{conn: &dns.Conn{Conn: c}, every: every}, nil
}

// count returns how many SRV records the server answers now.
func (p *prober) count() (int, error) {
	m := new(dns.Msg)
	m.SetQuestion(srvName, dns.TypeSRV)
	p.conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if err := p.conn.WriteMsg(m); err != nil {
		return 0, err
	}
	for {
		r, err := p.conn.ReadMsg()
		if err != nil {
			return 0, err
		}
		if r.Id == m.Id {
			return len(r.Answer), nil
		}
	}
}

// waitFor asks every p.every until the answer has n records and returns
// when the first such answer arrived.
func (p *prober) waitFor(n int) (time.Time, error) {
	deadline := time.Now().Add(waitChange)
	var last error
	for time.Now().Before(deadline) {
		got, err := p.count()
		if err == nil && got == n {
			return time.Now(), nil
		}
		if err != nil {
			last = err
		}
		time.Sleep(p.every)
	}
	return time.Time{}, fmt.Errorf("SRV answer did not reach %d records within %v (last error: %v)", n, waitChange, last)
}

// runMDNS runs the join/leave trials: host 1 serves DNS fed by mDNS, host 2
// joins and leaves as master-1.
func runMDNS(b *bench, h1, h2 *testnet.Host) (joins, leaves []event, err error) {
	corefile := func(listen string) (string, error) {
		path := filepath.Join(b.dir, "mdns-"+strings.NewReplacer(".", "-", ":", "-").Replace(listen)+".Corefile")
		s := listen + " {\n    clusterdns managed.example.com {\n        api 198.18.0.5\n    }\n}\n"
		return path, os.WriteFile(path, []byte(s), 0o644)
	}
	node := func(h *testnet.Host, name string) []string {
		return []string{"-mdns-cluster", mdnsCluster, "-node-name", name, "-node-role", "master",
			"-node-addr", h.IPv4.Addr().String(), "-mdns-exclude", "198.18.0.5"}
	}
	c1, err := corefile(".:53")
	if err != nil {
		return nil, nil, err
	}
	c2, err := corefile(".:5399")
	if err != nil {
		return nil, nil, err
	}
	p1, err := startVipstack(b, h1, -1, append([]string{"dns", "-conf", c1}, node(h1, "master-0")...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("host 1: %w", err)
	}
	defer p1.stop()
	snif, err := newSniffer(h1, h2.IPv4.Addr())
	if err != nil {
		return nil, nil, err
	}
	defer snif.close()
	pr, err := newProber(h1, net.JoinHostPort(h1.IPv4.Addr().String(), "53"), b.o.probeEvery)
	if err != nil {
		return nil, nil, err
	}
	if _, err := pr.waitFor(1); err != nil {
		return nil, nil, fmt.Errorf("host 1 alone: %w", err)
	}
	for trial := 1; trial <= b.o.trials; trial++ {
		snif.reset()
		t0 := time.Now()
		p2, err := startVipstackNoWait(b, h2, append([]string{"dns", "-conf", c2}, node(h2, "master-1")...)...)
		if err != nil {
			return nil, nil, fmt.Errorf("host 2: %w", err)
		}
		changed, err := pr.waitFor(2)
		if err != nil {
			p2.stop()
			return nil, nil, fmt.Errorf("trial %d, join: %w\nhost 2 logged:\n%s", trial, err, p2.log)
		}
		ann, _ := snif.times()
		j := event{FromCause: changed.Sub(t0), FromPacket: -1}
		if !ann.IsZero() {
			j.FromPacket = changed.Sub(ann)
		}
		joins = append(joins, j)

		t1 := time.Now()
		p2.cmd.Process.Signal(syscall.SIGTERM)
		changed, err = pr.waitFor(1)
		if err != nil {
			p2.stop()
			return nil, nil, fmt.Errorf("trial %d, leave: %w", trial, err)
		}
		_, bye := snif.times()
		l := event{FromCause: changed.Sub(t1), FromPacket: -1}
		if !bye.IsZero() {
			l.FromPacket = changed.Sub(bye)
		}
		leaves = append(leaves, l)
		p2.wait()
		b.logf("mdns trial %d: join %s ms from start, %s ms from announcement; leave %s ms from SIGTERM, %s ms from goodbye",
			trial, ms(j.FromCause), ms(j.FromPacket), ms(l.FromCause), ms(l.FromPacket))
	}
	return joins, leaves, nil
}

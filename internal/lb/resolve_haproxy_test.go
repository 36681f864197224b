package lb

import (
	"bufio"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/peers"
)

// fakeDNS is a DNS server on loopback whose A record for one name the
// test sets; no record answers NXDOMAIN.
type fakeDNS struct {
	mu   sync.Mutex
	addr netip.Addr
	srv  *dns.Server
}

func startFakeDNS(t *testing.T) (*fakeDNS, string) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeDNS{}
	f.srv = &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		f.mu.Lock()
		a := f.addr
		f.mu.Unlock()
		switch {
		case !a.IsValid():
			m.Rcode = dns.RcodeNameError
		case q.Question[0].Qtype == dns.TypeA:
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 1}, A: a.AsSlice()})
		}
		w.WriteMsg(m)
	})}
	go f.srv.ActivateAndServe()
	t.Cleanup(func() { f.srv.Shutdown() })
	return f, pc.LocalAddr().String()
}

func (f *fakeDNS) set(a netip.Addr) {
	f.mu.Lock()
	f.addr = a
	f.mu.Unlock()
}

// TestResolversMatchHaproxy: a server named by DNS with resolvers and
// init-addr none, in haproxy 2.6 and vipstack against one DNS server on
// loopback: while the name does not resolve, no client gets a server;
// once it does, clients reach that address; when the record changes,
// they follow it; when it is gone for longer than hold nx, the server
// goes into maintenance again.
func TestResolversMatchHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	ns, nsAddr := startFakeDNS(t)
	ports := freePorts(t, 2)
	for _, ip := range []string{"127.0.0.2", "127.0.0.3"} {
		ln, err := net.Listen("tcp", ip+":"+ports[1])
		if err != nil {
			t.Skipf("%s: %v", ip, err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Write([]byte(ip + "\n"))
				c.Close()
			}
		}()
	}
	conf := func(bind string) string {
		return strings.NewReplacer("{{NS}}", nsAddr, "{{BIND}}", bind, "{{PORT}}", ports[1]).Replace(`resolvers local
  nameserver ns {{NS}}
  resolve_retries 2
  timeout resolve 100ms
  timeout retry 200ms
  hold valid 100ms
  hold nx 300ms
defaults
  mode tcp
  timeout connect 1s
  timeout client 3s
  timeout server 3s
frontend fe
  bind {{BIND}}
  default_backend be
backend be
  server s1 db.test:{{PORT}} resolvers local init-addr none resolve-prefer ipv4
`)
	}
	hAddr := "127.0.0.4:" + ports[0]
	peers.HAProxy(t, conf(hAddr))
	cfg, err := haproxycfg.ParseWith("haproxy.cfg", []byte(conf("127.0.0.1:"+ports[0])), haproxycfg.Options{LookupHost: haproxycfg.SystemLookup})
	if err != nil {
		t.Fatal(err)
	}
	newLBOpts(t, Options{}, cfg)
	targets := map[string]string{"haproxy": hAddr, "vipstack": "127.0.0.1:" + ports[0]}
	greet := func(addr string) string {
		c, err := net.DialTimeout("tcp", addr, bound)
		if err != nil {
			return "refused"
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(bound))
		line, _ := bufio.NewReader(c).ReadString('\n')
		if line == "" {
			return "closed"
		}
		return strings.TrimSpace(line)
	}
	waitAll := func(want string) {
		t.Helper()
		for who, addr := range targets {
			deadline := time.Now().Add(bound)
			for got := greet(addr); got != want; got = greet(addr) {
				if time.Now().After(deadline) {
					t.Fatalf("%s: clients get %q, want %q", who, got, want)
				}
				time.Sleep(50 * time.Millisecond) // resolutions every 100ms, bounded
			}
		}
	}
	waitListening(t, "tcp", hAddr)
	waitAll("closed") // no address yet: no server
	ns.set(netip.MustParseAddr("127.0.0.2"))
	waitAll("127.0.0.2")
	ns.set(netip.MustParseAddr("127.0.0.3"))
	waitAll("127.0.0.3")
	ns.set(netip.Addr{})
	waitAll("closed") // NX for longer than hold nx: maintenance
	ns.set(netip.MustParseAddr("127.0.0.2"))
	waitAll("127.0.0.2")
}

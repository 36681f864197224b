package dns

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/discovery"
)

// CoreDNS's tables are process-wide, so the test binary builds one Server in
// TestMain and the tests (which do not run in parallel) share it. These are
// set once there and not reassigned.
var (
	// upstreamOrder is CoreDNS's own directive order, before NewServer
	// replaced it.
	upstreamOrder []string
	// srv is the process's Server.
	srv *Server
	// live is the registry the Server hands to clusterdns blocks for
	// liveZone; tests that feed it clear what they added.
	live = discovery.NewRegistry()
)

const liveZone = "managed.example.com."

func TestMain(m *testing.M) {
	upstreamOrder = slices.Clone(dnsserver.Directives)
	var err error
	srv, err = NewServer(Options{
		Registry: func(zone string) *discovery.Registry {
			if zone == liveZone {
				return live
			}
			return nil
		},
		Log: os.Stderr,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// start runs corefile (written to a temporary file, so that reload has a
// path) and stops it when the test ends. It returns the UDP address.
func start(t testing.TB, corefile string) string {
	t.Helper()
	path := t.TempDir() + "/Corefile"
	if err := os.WriteFile(path, []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	cf, err := ReadCorefile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(cf); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	for _, a := range srv.Addrs() {
		if u, ok := a.(*net.UDPAddr); ok {
			return u.String()
		}
	}
	t.Fatalf("no UDP listener in %v", srv.Addrs())
	return ""
}

// stub is an upstream DNS server on loopback that answers every A query
// with 198.18.0.99 and counts nothing else; forward's health checks (". NS")
// get an empty NOERROR.
func stub(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(stubAnswer)}
	go s.ActivateAndServe()
	t.Cleanup(func() { s.Shutdown() })
	return pc.LocalAddr().String()
}

// stubAnswer is the upstream's whole behaviour; shared with the root test.
func stubAnswer(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	m.RecursionAvailable = true
	if q := r.Question[0]; q.Qtype == dns.TypeA {
		rr, _ := dns.NewRR(q.Name + " 30 IN A 198.18.0.99")
		m.Answer = append(m.Answer, rr)
	}
	w.WriteMsg(m)
}

// query asks addr over UDP and returns the rcode and the answer and
// authority sections as zone-file lines without TTLs.
func query(t *testing.T, addr, name string, qtype uint16) (rcode string, answer, ns []string) {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Timeout: 5 * time.Second}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("query %s %s: %v", dns.TypeToString[qtype], name, err)
	}
	return dns.RcodeToString[r.Rcode], lines(r.Answer), lines(r.Ns)
}

// lines renders RRs without TTL (cache rewrites TTLs), sorted.
func lines(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		h := rr.Header()
		rdata := strings.TrimPrefix(rr.String(), h.String())
		out = append(out, fmt.Sprintf("%s %s %s", h.Name, dns.TypeToString[h.Rrtype], rdata))
	}
	slices.Sort(out)
	return out
}

func addrs(s ...string) []netip.Addr {
	out := make([]netip.Addr, len(s))
	for i, a := range s {
		out[i] = netip.MustParseAddr(a)
	}
	return out
}

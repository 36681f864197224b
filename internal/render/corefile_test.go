package render

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mdns "github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/dns"
)

// dnsServer is the test binary's embedded CoreDNS: its plugin tables are
// process-wide, so it is built once (and -count=N reuses it).
var dnsServer = sync.OnceValues(func() (*dns.Server, error) {
	return dns.NewServer(dns.Options{Log: os.Stderr})
})

// TestCorefileServes checks the rendered Corefile with the check `vipstack
// dns` runs (every plugin's own setup: template regexps and answers, hosts
// lines, forward targets), then serves it with CoreDNS's stock plugins and
// asks it the names the cluster needs. To serve it on loopback, the test
// moves the listener and the health endpoint to 127.0.0.1 on free ports and
// points forward at a stub upstream; the rest is served as rendered.
func TestCorefileServes(t *testing.T) {
	srv, err := dnsServer()
	if err != nil {
		t.Fatal(err)
	}
	text, err := Corefile(demo(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Check(dns.Corefile{Path: "Corefile", Contents: text}); err != nil {
		t.Fatalf("check: %v\n%s", err, text)
	}

	upstream := stubUpstream(t)
	served := string(text)
	for _, r := range []struct{ old, new string }{
		{"\n. {\n", "\n.:0 {\n    bind 127.0.0.1\n"},
		{"health :18080", "health 127.0.0.1:0"},
		{"forward . 198.18.0.53 {", "forward . " + upstream + " {"},
	} {
		if !strings.Contains(served, r.old) {
			t.Fatalf("rendered Corefile has no %q:\n%s", r.old, text)
		}
		served = strings.Replace(served, r.old, r.new, 1)
	}
	path := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(path, []byte(served), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(dns.Corefile{Path: path, Contents: []byte(served)}); err != nil {
		t.Fatalf("start: %v\n%s", err, served)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	var addr string
	for _, a := range srv.Addrs() {
		if u, ok := a.(*net.UDPAddr); ok {
			addr = u.String()
		}
	}
	if addr == "" {
		t.Fatalf("no UDP listener in %v", srv.Addrs())
	}

	for _, tc := range []struct {
		name  string
		qtype uint16
		want  string // rcode and sorted answers
	}{
		{"console.apps.managed.example.com", mdns.TypeA, "NOERROR console.apps.managed.example.com. A 198.18.0.7"},
		{"a.b.apps.managed.example.com", mdns.TypeA, "NOERROR a.b.apps.managed.example.com. A 198.18.0.7"},
		// IPv4-only VIPs: NODATA, never an upstream answer.
		{"console.apps.managed.example.com", mdns.TypeAAAA, "NOERROR"},
		{"api.managed.example.com", mdns.TypeAAAA, "NOERROR"},
		{"api.managed.example.com", mdns.TypeA, "NOERROR api.managed.example.com. A 198.18.0.5"},
		{"api-int.managed.example.com", mdns.TypeA, "NOERROR api-int.managed.example.com. A 198.18.0.5"},
		{"api-int.managed.example.com", mdns.TypeAAAA, "NOERROR"},
		{"master-0.managed.example.com", mdns.TypeA, "NOERROR master-0.managed.example.com. A 198.18.0.11"},
		{"worker-1", mdns.TypeA, "NOERROR worker-1. A 198.18.0.22"},
		// Anchored expressions: these are not VIP names and go upstream.
		{"xapi.managed.example.com", mdns.TypeA, "NOERROR xapi.managed.example.com. A 198.18.0.99"},
		{"myapps.managed.example.com", mdns.TypeA, "NOERROR myapps.managed.example.com. A 198.18.0.99"},
		{"apps.managed.example.com", mdns.TypeA, "NOERROR apps.managed.example.com. A 198.18.0.99"},
		{"www.example.org", mdns.TypeA, "NOERROR www.example.org. A 198.18.0.99"},
		{"www.example.org", mdns.TypeAAAA, "NOERROR www.example.org. AAAA fd00::99"},
	} {
		t.Run(mdns.TypeToString[tc.qtype]+" "+tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ask(t, addr, tc.name, tc.qtype)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// stubUpstream answers every A query with 198.18.0.99 and every AAAA query
// with fd00::99, on loopback, so an answer from it shows a name went
// upstream.
func stubUpstream(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &mdns.Server{PacketConn: pc, Handler: mdns.HandlerFunc(func(w mdns.ResponseWriter, r *mdns.Msg) {
		m := new(mdns.Msg)
		m.SetReply(r)
		switch q := r.Question[0]; q.Qtype {
		case mdns.TypeA:
			rr, _ := mdns.NewRR(q.Name + " 30 IN A 198.18.0.99")
			m.Answer = append(m.Answer, rr)
		case mdns.TypeAAAA:
			rr, _ := mdns.NewRR(q.Name + " 30 IN AAAA fd00::99")
			m.Answer = append(m.Answer, rr)
		}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = s.ActivateAndServe() }()
	t.Cleanup(func() { _ = s.Shutdown() })
	return pc.LocalAddr().String()
}

// ask queries addr and returns the rcode and the answers without TTLs.
func ask(t *testing.T, addr, name string, qtype uint16) string {
	t.Helper()
	m := new(mdns.Msg)
	m.SetQuestion(mdns.Fqdn(name), qtype)
	c := &mdns.Client{Timeout: 5 * time.Second}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("query %s %s: %v", mdns.TypeToString[qtype], name, err)
	}
	var out []string
	for _, rr := range r.Answer {
		h := rr.Header()
		out = append(out, fmt.Sprintf("%s %s %s", h.Name, mdns.TypeToString[h.Rrtype], strings.TrimPrefix(rr.String(), h.String())))
	}
	slices.Sort(out)
	return strings.Join(append([]string{mdns.RcodeToString[r.Rcode]}, out...), " ")
}

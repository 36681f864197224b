package dns

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/peers"
)

// Stock CoreDNS (internal/peers/corednsstock), built once per test run
// (set by stockBin only).
var (
	stockOnce sync.Once
	stockPath string
	stockErr  error
)

func stockBin(t *testing.T) string {
	t.Helper()
	stockOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vscf-stock-")
		if err != nil {
			stockErr = err
			return
		}
		stockPath, stockErr = peers.BuildCoreDNS(dir)
	})
	if stockErr != nil {
		t.Fatal(stockErr)
	}
	return stockPath
}

// startStock runs stock CoreDNS with corefile, in which PORT stands for the
// port it listens on (127.0.0.1 only), until the test ends, and returns
// its address once it answers, and its output. The port is picked free
// and then released for CoreDNS to bind; if another socket took it
// meanwhile and CoreDNS exited, it tries again on another port.
func startStock(t *testing.T, corefile string) (string, *bytes.Buffer) {
	t.Helper()
	var addr string
	var out *bytes.Buffer
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		path := filepath.Join(t.TempDir(), "Corefile")
		if err := os.WriteFile(path, []byte(strings.ReplaceAll(corefile, "PORT", fmt.Sprint(port))), 0o644); err != nil {
			t.Fatal(err)
		}
		out = new(bytes.Buffer)
		cmd := exec.Command(stockBin(t), "-conf", path)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		addr = fmt.Sprintf("127.0.0.1:%d", port)
		t.Cleanup(func() {
			cmd.Process.Kill()
			<-exited
			if t.Failed() {
				t.Logf("stock CoreDNS on %s printed:\n%s", addr, out)
			}
		})
		err := probe(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
		select {
		case <-exited:
			if attempt < 3 {
				t.Logf("stock CoreDNS on %s exited (%v); another port", addr, err)
				continue
			}
			t.Fatalf("stock CoreDNS on %s exited:\n%s", addr, out)
		default:
		}
		if err != nil {
			t.Fatalf("stock CoreDNS on %s: %v\n%s", addr, err, out)
		}
		return addr, out
	}
}

// startBoth runs corefile (PORT for the port; each server gets its own)
// in stock CoreDNS and in vipstack's DNS, and returns their addresses.
func startBoth(t *testing.T, corefile string) (stock, ours string) {
	t.Helper()
	stock, _ = startStock(t, corefile)
	ours = start(t, strings.ReplaceAll(corefile, "PORT", "0"))
	return stock, ours
}

// ask sends q's question to addr (UDP, from 127.0.0.1) and renders the
// reply: the header bits that differ between answers, then every section,
// each record on a line, sorted within its section (loadbalance shuffles
// them), TTLs included.
func ask(t *testing.T, addr string, q dns.Question) string {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(q.Name, q.Qtype)
	m.Question[0].Qclass = q.Qclass
	m.SetEdns0(1232, false)
	c := &dns.Client{Timeout: 5 * time.Second}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s %s: %v", addr, q.String(), err)
	}
	return render(r)
}

func render(r *dns.Msg) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rcode %s aa %v ra %v tc %v\n", dns.RcodeToString[r.Rcode], r.Authoritative, r.RecursionAvailable, r.Truncated)
	for _, s := range []struct {
		name string
		rrs  []dns.RR
	}{{"answer", r.Answer}, {"authority", r.Ns}, {"additional", r.Extra}} {
		var lines []string
		for _, rr := range s.rrs {
			if rr.Header().Rrtype == dns.TypeOPT {
				continue
			}
			lines = append(lines, rr.String())
		}
		slices.Sort(lines)
		for _, l := range lines {
			fmt.Fprintf(&b, "%s: %s\n", s.name, l)
		}
	}
	return b.String()
}

// same asks both servers each question and fails on any difference. Each
// expect entry is a question's index and text its answer must contain,
// so that two servers failing alike do not pass.
func same(t *testing.T, stock, ours string, qs []dns.Question, expect ...any) {
	t.Helper()
	sameWith(t, func(s string) string { return s }, stock, ours, qs, expect...)
}

// sameWith is same comparing the answers as norm rewrites them.
func sameWith(t *testing.T, norm func(string) string, stock, ours string, qs []dns.Question, expect ...any) {
	t.Helper()
	answers := make([]string, len(qs))
	for i, q := range qs {
		want, got := norm(ask(t, stock, q)), norm(ask(t, ours, q))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: stock CoreDNS and vipstack differ (-stock +vipstack):\n%s", q.String(), diff)
		}
		answers[i] = got
	}
	for i := 0; i+1 < len(expect); i += 2 {
		n, text := expect[i].(int), expect[i+1].(string)
		if !strings.Contains(answers[n], text) {
			t.Errorf("%s: answer\n%s\nhas no %q", qs[n].String(), answers[n], text)
		}
	}
}

func in(name string, qtype uint16) dns.Question {
	return dns.Question{Name: dns.Fqdn(name), Qtype: qtype, Qclass: dns.ClassINET}
}

// testZone is a zone file for example.test with the record types the
// corpus's file zones use.
const testZone = `$ORIGIN example.test.
$TTL 3600
@       IN SOA ns1.example.test. hostmaster.example.test. 2026112801 7200 3600 1209600 300
@       IN NS  ns1.example.test.
@       IN MX  10 mail.example.test.
ns1     IN A   198.18.1.1
mail    IN A   198.18.1.2
www     IN A   198.18.1.3
www     IN AAAA fd00::3
web     IN CNAME www.example.test.
pool    IN A   198.18.2.1
pool    IN A   198.18.2.2
pool    IN A   198.18.2.3
pool    IN A   198.18.2.4
pool    IN AAAA fd00::2:1
pool    IN AAAA fd00::2:2
*.apps  IN A   198.18.1.10
sub     IN NS  ns.sub.example.test.
ns.sub  IN A   198.18.1.20
txt     IN TXT "v=spf1 -all"
`

// TestStockSideBySide runs the same Corefiles in stock CoreDNS and in
// vipstack's DNS and asks both the same questions: file, loadbalance, any,
// chaos, acl, loop (without a loop), rewrite, whoami, minimal and header
// give the same answers, and loadbalance shuffles in both.
func TestStockSideBySide(t *testing.T) {
	dir := t.TempDir()
	zone := filepath.Join(dir, "db.example.test")
	if err := os.WriteFile(zone, []byte(testZone), 0o644); err != nil {
		t.Fatal(err)
	}
	upstream := stub(t)

	t.Run("file", func(t *testing.T) {
		stock, ours := startBoth(t, "example.test:PORT {\n    bind 127.0.0.1\n    file "+zone+"\n}\n")
		same(t, stock, ours, []dns.Question{
			in("www.example.test", dns.TypeA), in("www.example.test", dns.TypeAAAA),
			in("web.example.test", dns.TypeA), in("example.test", dns.TypeSOA),
			in("example.test", dns.TypeNS), in("example.test", dns.TypeMX),
			in("nosuch.example.test", dns.TypeA), in("www.example.test", dns.TypeMX),
			in("x.apps.example.test", dns.TypeA), in("a.b.apps.example.test", dns.TypeA),
			in("host.sub.example.test", dns.TypeA), in("txt.example.test", dns.TypeTXT),
			in("other.test", dns.TypeA),
		}, 0, "www.example.test.\t3600\tIN\tA\t198.18.1.3", 2, "IN\tCNAME\twww.example.test.", 6, "rcode NXDOMAIN aa true",
			8, "x.apps.example.test.\t3600\tIN\tA\t198.18.1.10", 10, "authority: sub.example.test.\t3600\tIN\tNS", 12, "rcode REFUSED")
	})

	t.Run("loadbalance", func(t *testing.T) {
		cf := "example.test:PORT {\n    bind 127.0.0.1\n    loadbalance round_robin\n    file " + zone + "\n}\n"
		stock, ours := startBoth(t, cf)
		qs := []dns.Question{in("pool.example.test", dns.TypeA), in("pool.example.test", dns.TypeAAAA), in("www.example.test", dns.TypeA)}
		same(t, stock, ours, qs, 0, "198.18.2.4")
		// Both shuffle: over 30 answers the first A record changes.
		for name, addr := range map[string]string{"stock CoreDNS": stock, "vipstack": ours} {
			firsts := map[string]bool{}
			for range 30 {
				m := new(dns.Msg)
				m.SetQuestion("pool.example.test.", dns.TypeA)
				r, err := dns.Exchange(m, addr)
				if err != nil {
					t.Fatal(err)
				}
				firsts[r.Answer[0].(*dns.A).A.String()] = true
			}
			if len(firsts) < 2 {
				t.Errorf("%s: the first of pool's 4 A records was always %v over 30 answers; want it shuffled", name, firsts)
			}
		}
	})

	t.Run("any", func(t *testing.T) {
		stock, ours := startBoth(t, "example.test:PORT {\n    bind 127.0.0.1\n    any\n    file "+zone+"\n}\n")
		same(t, stock, ours, []dns.Question{in("www.example.test", dns.TypeANY), in("www.example.test", dns.TypeA)},
			0, "IN\tHINFO\t\"ANY obsoleted\" \"See RFC 8482\"")
	})

	t.Run("chaos", func(t *testing.T) {
		stock, ours := startBoth(t, ".:PORT {\n    bind 127.0.0.1\n    chaos vipstack-test ops@example.test noc@example.test\n    forward . "+upstream+"\n}\n")
		var qs []dns.Question
		for _, n := range []string{"version.bind", "version.server", "authors.bind", "hostname.bind", "id.server"} {
			qs = append(qs, dns.Question{Name: n + ".", Qtype: dns.TypeTXT, Qclass: dns.ClassCHAOS})
		}
		same(t, stock, ours, append(qs, in("www.example.org", dns.TypeA)),
			0, "CH\tTXT\t\"vipstack-test\"", 2, "\"noc@example.test\"", 5, "198.18.0.99")
	})

	t.Run("acl", func(t *testing.T) {
		cf := "example.test:PORT {\n    bind 127.0.0.1\n    acl {\n        block type AAAA net 127.0.0.0/8\n        filter type MX net 127.0.0.1\n" +
			"        allow net 127.0.0.1\n        block\n    }\n    file " + zone + "\n}\n" +
			"example.org:PORT {\n    bind 127.0.0.1\n    acl {\n        drop net 198.18.0.0/15\n        block net 127.0.0.0/8\n    }\n    forward . " + upstream + "\n}\n"
		stock, ours := startBoth(t, cf)
		same(t, stock, ours, []dns.Question{
			in("www.example.test", dns.TypeA), in("www.example.test", dns.TypeAAAA),
			in("example.test", dns.TypeMX), in("www.example.org", dns.TypeA),
		}, 0, "198.18.1.3", 1, "rcode REFUSED", 2, "rcode NOERROR", 3, "rcode REFUSED")
	})

	t.Run("loop without a loop", func(t *testing.T) {
		stock, ours := startBoth(t, ".:PORT {\n    bind 127.0.0.1\n    loop\n    forward . "+upstream+"\n}\n")
		same(t, stock, ours, []dns.Question{in("www.example.org", dns.TypeA), in("www.example.org", dns.TypeTXT)}, 0, "198.18.0.99")
	})

	t.Run("rewrite whoami minimal header", func(t *testing.T) {
		cf := "example.test:PORT {\n    bind 127.0.0.1\n    rewrite name exact alias.example.test. www.example.test.\n    minimal\n" +
			"    header {\n        response set ra\n    }\n    file " + zone + "\n}\n" +
			"whoami.test:PORT {\n    bind 127.0.0.1\n    whoami\n}\n"
		stock, ours := startBoth(t, cf)
		same(t, stock, ours, []dns.Question{
			in("alias.example.test", dns.TypeA), in("www.example.test", dns.TypeA), in("nosuch.example.test", dns.TypeA),
		}, 0, "alias.example.test.\t3600\tIN\tA\t198.18.1.3", 1, "ra true")
		// whoami answers with the client's port, which differs per
		// query: compare without it.
		for name, addr := range map[string]string{"stock CoreDNS": stock, "vipstack": ours} {
			got := ask(t, addr, in("whoami.test", dns.TypeA))
			if !strings.Contains(got, "additional: whoami.test.\t0\tIN\tA\t127.0.0.1\n") || !strings.Contains(got, "_udp.whoami.test.\t0\tIN\tSRV\t0 0 ") {
				t.Errorf("%s whoami: got\n%s\nwant the client's address 127.0.0.1 and its UDP port", name, got)
			}
		}
	})
}

// TestStockLoopDetected: a forward back to the server itself makes the loop
// plugin stop the process, in stock CoreDNS and in vipstack dns alike (a
// supervisor or Kubernetes restarts it; the message names the zone and
// the probe query).
func TestStockLoopDetected(t *testing.T) {
	for _, c := range []struct {
		name string
		argv func(conf string) []string
	}{
		{"stock CoreDNS", func(conf string) []string { return []string{stockBin(t), "-conf", conf} }},
		{"vipstack dns", func(conf string) []string { return []string{vipstackBin(t), "dns", "-conf", conf} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "Corefile")
			args := c.argv(path) // builds the binary first, then takes a port
			port := freePort(t)
			cf := fmt.Sprintf(".:%d {\n    bind 127.0.0.1\n    loop\n    forward . 127.0.0.1:%d\n}\n", port, port)
			if err := os.WriteFile(path, []byte(cf), 0o644); err != nil {
				t.Fatal(err)
			}
			out, exited, err := runBounded(t, exec.Command(args[0], args[1:]...), 30*time.Second)
			switch {
			case !exited:
				t.Errorf("still running after 30 s with a forward loop; output:\n%s", out)
			case err == nil || !strings.Contains(out, "Loop (127.0.0.1:") || !strings.Contains(out, "detected for zone \".\""):
				t.Errorf("exit %v, output:\n%s\nwant a non-zero exit after \"Loop (127.0.0.1:... detected for zone \\\".\\\"\"", err, out)
			}
		})
	}
}

// runBounded runs cmd with stdout and stderr combined until it exits or
// bound passes (then it is killed): it returns the output, whether cmd
// exited by itself, and its exit error.
func runBounded(t *testing.T, cmd *exec.Cmd, bound time.Duration) (out string, exited bool, err error) {
	t.Helper()
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
		return buf.String(), true, err
	case <-time.After(bound):
		cmd.Process.Kill()
		<-done
		return buf.String(), false, nil
	}
}

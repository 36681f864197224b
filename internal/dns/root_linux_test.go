package dns

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// netnsPrefix starts the names of this package's namespaces.
const netnsPrefix = "vsJ"

// dnsProc is one `vipstack dns` process in a namespace.
type dnsProc struct {
	cmd    *exec.Cmd
	stderr *syncbuf.Buffer
	exited chan error
	path   string // the Corefile
}

// startDNS runs `vipstack dns -conf <corefile> args...` in h and waits for
// it to say it is serving (Start returns only once every listener has
// answered).
func startDNS(t *testing.T, h *testnet.Host, corefile string, args ...string) *dnsProc {
	t.Helper()
	path := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(path, []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	c := h.Command(vipstackBin(t), append([]string{"dns", "-conf", path}, args...)...)
	p := &dnsProc{cmd: c, stderr: &syncbuf.Buffer{}, exited: make(chan error, 1), path: path}
	c.Stderr = p.stderr
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.StartFor(t, c); err != nil {
		t.Fatal(err)
	}
	serving := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "vipstack dns: serving") {
				serving <- sc.Text()
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() { p.exited <- c.Wait() }()
	select {
	case <-serving:
	case err := <-p.exited:
		t.Fatalf("vipstack dns exited before serving: %v\n%s", err, p.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("vipstack dns did not start serving within 30s\n%s", p.stderr)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("vipstack dns in %s logged:\n%s", h.Name, p.stderr)
		}
	})
	return p
}

// stop sends SIGTERM and checks for a clean exit.
func (p *dnsProc) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		if err != nil {
			t.Errorf("vipstack dns exited with %v after SIGTERM\n%s", err, p.stderr)
		}
	case <-time.After(15 * time.Second):
		t.Errorf("vipstack dns still running 15s after SIGTERM")
	}
}

// serveStub runs the upstream stub on h's IPv4 address, port 53.
func serveStub(t *testing.T, h *testnet.Host) {
	t.Helper()
	var pc net.PacketConn
	err := h.Do(func() (err error) {
		pc, err = net.ListenPacket("udp", net.JoinHostPort(h.IPv4.Addr().String(), "53"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(stubAnswer)}
	go s.ActivateAndServe()
	t.Cleanup(func() { s.Shutdown() })
}

// digResult is what dig printed: the status and the answer and authority
// records as "name TYPE rdata" (no TTL), sorted.
type digResult struct {
	Status    string
	Answer    []string
	Authority []string
}

var digStatus = regexp.MustCompile(`status: ([A-Z]+)`)

// dig runs the real dig in h.
func dig(t *testing.T, h *testnet.Host, args ...string) digResult {
	t.Helper()
	all := append([]string{"+tries=1", "+time=3", "+noall", "+comments", "+answer", "+authority"}, args...)
	out, err := h.Run("dig", all...)
	if err != nil {
		t.Fatalf("dig %s: %v", strings.Join(args, " "), err)
	}
	var r digResult
	if m := digStatus.FindStringSubmatch(out); m != nil {
		r.Status = m[1]
	}
	section := ""
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, ";; ANSWER SECTION"):
			section = "answer"
		case strings.HasPrefix(line, ";; AUTHORITY SECTION"):
			section = "authority"
		case strings.HasPrefix(line, ";") || strings.TrimSpace(line) == "":
			if strings.HasPrefix(line, ";;") && !strings.Contains(line, "SECTION") {
				section = ""
			}
		default:
			rr, err := dns.NewRR(line)
			if err != nil {
				t.Fatalf("dig printed %q: %v", line, err)
			}
			l := lines([]dns.RR{rr})[0]
			if section == "answer" {
				r.Answer = append(r.Answer, l)
			} else if section == "authority" {
				r.Authority = append(r.Authority, l)
			}
		}
	}
	slices.Sort(r.Answer)
	slices.Sort(r.Authority)
	return r
}

// TestRootDig runs the seed's Corefile (upstream changed to a stub in the
// topology) plus a clusterdns block with the built `vipstack dns` in a
// namespace, and checks every record kind with dig, over UDP, TCP and IPv6,
// the forwarding, and the health endpoint.
func TestRootDig(t *testing.T) {
	testnet.RequireRoot(t)
	if _, err := exec.LookPath("dig"); err != nil {
		t.Skip("skipping: needs dig (apt-get install dnsutils)")
	}
	topo := testnet.New(t, testnet.Options{Hosts: 2, Client: true, Prefix: netnsPrefix})
	server, upstream, client := topo.Hosts[0], topo.Hosts[1], topo.Client
	serveStub(t, upstream)

	b, err := os.ReadFile("testdata/seed000.Corefile")
	if err != nil {
		t.Fatal(err)
	}
	corefile := strings.Replace(string(b), "forward . 10.68.5.26 {", "forward . "+upstream.IPv4.Addr().String()+" {", 1)
	corefile = strings.Replace(corefile, "    cache 30\n", clusterBlock+"    cache 30\n", 1)
	p := startDNS(t, server, corefile)

	at := "@" + server.IPv4.Addr().String()
	soa := []string{"managed.example.com. SOA ns.managed.example.com. hostmaster.managed.example.com. 1 7200 1800 86400 60"}
	tests := []struct {
		args []string
		want digResult
	}{
		// clusterdns: VIPs, both families, NODATA for a missing family.
		{[]string{"api.managed.example.com", "A"}, digResult{Status: "NOERROR", Answer: []string{"api.managed.example.com. A 198.18.0.5"}}},
		{[]string{"api.managed.example.com", "AAAA"}, digResult{Status: "NOERROR", Answer: []string{"api.managed.example.com. AAAA fd00:bb::5"}}},
		{[]string{"api-int.managed.example.com", "A"}, digResult{Status: "NOERROR", Answer: []string{"api-int.managed.example.com. A 198.18.0.5"}}},
		{[]string{"console-openshift-console.apps.managed.example.com", "A"}, digResult{Status: "NOERROR", Answer: []string{"console-openshift-console.apps.managed.example.com. A 198.18.0.7"}}},
		{[]string{"console-openshift-console.apps.managed.example.com", "AAAA"}, digResult{Status: "NOERROR", Authority: soa}},
		// clusterdns: nodes, fully qualified and short.
		{[]string{"master-0.managed.example.com", "A"}, digResult{Status: "NOERROR", Answer: []string{"master-0.managed.example.com. A 198.18.0.11"}}},
		{[]string{"master-0.managed.example.com", "AAAA"}, digResult{Status: "NOERROR", Answer: []string{"master-0.managed.example.com. AAAA fd00:bb::11"}}},
		{[]string{"worker-0.managed.example.com", "AAAA"}, digResult{Status: "NOERROR", Authority: soa}},
		{[]string{"master-1", "A"}, digResult{Status: "NOERROR", Answer: []string{"master-1. A 198.18.0.12"}}},
		// clusterdns: etcd-N and the SRV record.
		{[]string{"etcd-2.managed.example.com", "A"}, digResult{Status: "NOERROR", Answer: []string{"etcd-2.managed.example.com. A 198.18.0.13"}}},
		{[]string{"_etcd-server-ssl._tcp.managed.example.com", "SRV"}, digResult{Status: "NOERROR", Answer: srvLines(3)}},
		// The seed's own lines answer what clusterdns passes on.
		{[]string{"managed-mbggk-master-1.managed.example.com", "A"}, digResult{Status: "NOERROR", Answer: []string{"managed-mbggk-master-1.managed.example.com. A 10.0.3.51"}}},
		{[]string{"managed-mbggk-worker-0-6wcz5", "A"}, digResult{Status: "NOERROR", Answer: []string{"managed-mbggk-worker-0-6wcz5. A 10.0.2.41"}}},
		// Forwarding to the upstream: other zones, and unknown cluster names.
		{[]string{"www.example.org", "A"}, digResult{Status: "NOERROR", Answer: []string{"www.example.org. A 198.18.0.99"}}},
		{[]string{"unknown.managed.example.com", "A"}, digResult{Status: "NOERROR", Answer: []string{"unknown.managed.example.com. A 198.18.0.99"}}},
		// Other transports.
		{[]string{"+tcp", "_etcd-server-ssl._tcp.managed.example.com", "SRV"}, digResult{Status: "NOERROR", Answer: srvLines(3)}},
		{[]string{"@" + server.IPv6.Addr().String(), "api.managed.example.com", "AAAA"}, digResult{Status: "NOERROR", Answer: []string{"api.managed.example.com. AAAA fd00:bb::5"}}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			args := tt.args
			if !strings.HasPrefix(args[0], "@") {
				args = append([]string{at}, args...)
			}
			got := dig(t, client, args...)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("dig %s (-want +got):\n%s", strings.Join(args, " "), diff)
			}
		})
	}

	t.Run("health", func(t *testing.T) {
		var resp string
		err := server.Do(func() error {
			c, err := net.DialTimeout("tcp", "127.0.0.1:18080", 3*time.Second)
			if err != nil {
				return err
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(3 * time.Second))
			fmt.Fprint(c, "GET /health HTTP/1.0\r\nHost: localhost\r\n\r\n")
			b, err := io.ReadAll(c)
			resp = string(b)
			return err
		})
		if err != nil {
			t.Fatalf("GET :18080/health: %v", err)
		}
		if !strings.HasPrefix(resp, "HTTP/1.0 200 OK") || !strings.HasSuffix(resp, "\r\n\r\nOK") {
			t.Errorf("GET :18080/health answered %q, want 200 OK with body OK", resp)
		}
	})

	p.stop(t)
}

// eventually polls f (which queries a process in a namespace) until it
// returns "" or timeout passes, and fails with f's last complaint.
func eventually(t *testing.T, timeout time.Duration, f func() string) {
	t.Helper()
	testutil.Eventually(t, timeout, func() error {
		if msg := f(); msg != "" {
			return errors.New(msg)
		}
		return nil
	})
}

// TestRootMDNSJoinLeave runs `vipstack dns -mdns-cluster` on two hosts: each
// publishes itself over mDNS and feeds what it browses into its clusterdns
// zone. The SRV answer on host 1 grows when host 2 joins and shrinks when it
// leaves (SIGTERM: goodbye packets).
func TestRootMDNSJoinLeave(t *testing.T) {
	testnet.RequireRoot(t)
	if _, err := exec.LookPath("dig"); err != nil {
		t.Skip("skipping: needs dig (apt-get install dnsutils)")
	}
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: netnsPrefix})
	h1, h2 := topo.Hosts[0], topo.Hosts[1]
	corefile := ". {\n    clusterdns managed.example.com {\n        api 198.18.0.5\n    }\n}\n"
	node := func(h *testnet.Host, name string) []string {
		return []string{"-mdns-cluster", "c1", "-node-name", name, "-node-role", "master",
			"-node-addr", h.IPv4.Addr().String() + "," + h.IPv6.Addr().String(), "-mdns-exclude", "198.18.0.5"}
	}
	p1 := startDNS(t, h1, corefile, node(h1, "master-0")...)
	at := "@" + h1.IPv4.Addr().String()
	srvIs := func(want []string) func() string {
		return func() string {
			got := dig(t, h1, at, "_etcd-server-ssl._tcp.managed.example.com", "SRV")
			if diff := cmp.Diff(want, got.Answer); diff != "" {
				return "SRV answer on host 1 (-want +got):\n" + diff
			}
			return ""
		}
	}
	eventually(t, 10*time.Second, srvIs(srvLines(1)))

	p2 := startDNS(t, h2, corefile, node(h2, "master-1")...)
	eventually(t, 10*time.Second, srvIs(srvLines(2)))
	if got := dig(t, h1, at, "etcd-1.managed.example.com", "A"); !slices.Equal(got.Answer, []string{"etcd-1.managed.example.com. A " + h2.IPv4.Addr().String()}) {
		t.Errorf("etcd-1 on host 1: %v, want host 2's address", got.Answer)
	}
	if got := dig(t, h1, at, "master-1", "AAAA"); !slices.Equal(got.Answer, []string{"master-1. AAAA " + h2.IPv6.Addr().String()}) {
		t.Errorf("master-1 AAAA on host 1: %v, want host 2's address", got.Answer)
	}

	p2.stop(t)
	eventually(t, 10*time.Second, srvIs(srvLines(1)))
	if got := dig(t, h1, at, "master-1.managed.example.com", "A"); got.Status != "NXDOMAIN" {
		t.Errorf("master-1 after it left: status %s, want NXDOMAIN", got.Status)
	}
	p1.stop(t)
}

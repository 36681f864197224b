package story_test

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

const clusterYAML = `name: t1
baseDomain: example.com
apiVIPs: [198.18.0.5]
ingressVIPs: [198.18.0.7]
machineNetworks: [198.18.0.0/24]
vrrp: {version: 3, advertInterval: 100ms}
nodes:
  - {name: master-0, role: master, ips: [198.18.0.11]}
  - {name: master-1, role: master, ips: [198.18.0.12]}
  - {name: worker-0, role: worker, ips: [198.18.0.13]}
`

// serveIn starts an HTTP(S) server on addr inside h's namespace.
func serveIn(t *testing.T, h *testnet.Host, addr string, tlsOn bool, body string) {
	t.Helper()
	var ln net.Listener
	if err := h.Do(func() error {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, body)
	})}}
	if tlsOn {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
}

// TestNodeAgents runs `vipstack node` on two masters and a worker with
// stand-in API servers and a stand-in router: the API VIP goes to a master
// and carries a client's HTTPS request through VIP -> LB -> a master's
// /readyz; the Ingress VIP goes to the worker whose router answers; the
// cluster DNS answers api.<zone>; a master whose LB and API stop loses the
// API VIP to the other.
func TestNodeAgents(t *testing.T) {
	testnet.RequireRoot(t)
	dir := t.TempDir()
	bin, err := peers.BuildVipstack(dir)
	if err != nil {
		t.Fatal(err)
	}
	topo := testnet.New(t, testnet.Options{Hosts: 3, Client: true, Prefix: "vsn"})
	cfg := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(cfg, []byte(clusterYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	m0, m1, w0 := topo.Hosts[0], topo.Hosts[1], topo.Hosts[2]
	serveIn(t, m0, ":6443", true, "ok from master-0")
	serveIn(t, m1, ":6443", true, "ok from master-1")
	serveIn(t, w0, ":1936", false, "router ready")
	var nodes []*peers.Node
	for i, name := range []string{"master-0", "master-1", "worker-0"} {
		h := topo.Hosts[i]
		args := []string{"node", "--config", cfg, "--node", name, "--state-dir", filepath.Join(dir, name), "--log-level", "debug"}
		if strings.HasPrefix(name, "master-") {
			args = append(args, "--lb-socket", filepath.Join(dir, name+".sock"))
		}
		c := h.Command(bin, args...)
		n, err := peers.StartCmd(h, c)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, n := range nodes {
				t.Logf("---- node %d log:\n%s", i, testutil.Tail(n.Log(), 40))
			}
		}
	})
	api, ingress := netip.MustParseAddr("198.18.0.5"), netip.MustParseAddr("198.18.0.7")
	// Masters have no router: their chk_ingress starts undecided (counted
	// as passing) and fails on its first probe, so the Ingress VIP may
	// visit a master before it settles on the worker.
	if _, err := peers.WaitSoleHolder(topo.Hosts, ingress, w0, 2*time.Second, 30*time.Second); err != nil {
		t.Fatalf("ingress VIP: %v (want the worker: its router answers)", err)
	}
	var apiHolder *testnet.Host
	for deadline := time.Now().Add(20 * time.Second); apiHolder == nil && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if hs, err := peers.Holders(topo.Hosts, api); err == nil && len(hs) == 1 {
			apiHolder = hs[0]
		}
	}
	if apiHolder == nil || apiHolder == w0 {
		t.Fatalf("the API VIP has no single master holder: %v", apiHolder)
	}
	// The client reaches a master's /readyz through VIP:6443 -> redirect -> LB.
	get := func() (string, error) {
		var body string
		err := topo.Client.Do(func() error {
			conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", "198.18.0.5:6443", &tls.Config{InsecureSkipVerify: true})
			if err != nil {
				return err
			}
			defer conn.Close()
			fmt.Fprintf(conn, "GET /readyz HTTP/1.0\r\n\r\n")
			b, err := io.ReadAll(conn)
			body = string(b)
			return err
		})
		return body, err
	}
	var body string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if body, err = get(); err == nil && strings.Contains(body, "ok from master-") {
			break
		}
	}
	if !strings.Contains(body, "ok from master-") {
		t.Fatalf("client through the API VIP: %v %q", err, body)
	}
	// An operator takes master-1 out of every master's load balancer
	// through their --lb-socket: clients through the VIP reach master-0
	// alone; back to ready, master-1 answers again.
	runtimeAPI := func(master, cmd string) string {
		t.Helper()
		c, err := net.DialTimeout("unix", filepath.Join(dir, master+".sock"), 5*time.Second)
		if err != nil {
			t.Fatalf("%s's --lb-socket: %v", master, err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, cmd+"\n")
		b, err := io.ReadAll(c)
		if err != nil {
			t.Fatalf("%s's --lb-socket, %q: %v", master, cmd, err)
		}
		return string(b)
	}
	for _, m := range []string{"master-0", "master-1"} {
		if got := runtimeAPI(m, "set server masters/master-1 state maint"); got != "\n" {
			t.Fatalf("%s: set server masters/master-1 state maint: %q", m, got)
		}
	}
	for range 6 {
		if body, err := get(); err != nil || !strings.Contains(body, "ok from master-0") {
			t.Errorf("through the API VIP with master-1 in maintenance: %v %q, want master-0", err, body)
		}
	}
	if got := runtimeAPI("master-1", "show servers state masters"); !strings.Contains(got, " masters 2 master-1 198.18.0.12 0 1 ") {
		t.Errorf("show servers state on master-1 (master-1: op state 0, admin state 1):\n%s", got)
	}
	for _, m := range []string{"master-0", "master-1"} {
		runtimeAPI(m, "set server masters/master-1 state ready")
	}
	seen := map[string]bool{}
	for range 8 {
		if body, err := get(); err == nil && strings.Contains(body, "ok from") {
			seen[strings.TrimSpace(body[strings.LastIndex(body, "ok from"):])] = true
		}
	}
	if !seen["ok from master-0"] || !seen["ok from master-1"] {
		t.Errorf("through the API VIP after master-1 is ready again: %v, want both masters", seen)
	}
	// Cluster DNS on a master answers api.t1.example.com.
	out, err := topo.Client.Run("dig", "+short", "+time=2", "+tries=3", "@198.18.0.11", "api.t1.example.com", "A")
	if err != nil || strings.TrimSpace(out) != "198.18.0.5" {
		t.Fatalf("dig api: %v %q", err, out)
	}
	out, err = topo.Client.Run("dig", "+short", "+time=2", "@198.18.0.13", "console.apps.t1.example.com", "A")
	if err != nil || strings.TrimSpace(out) != "198.18.0.7" {
		t.Fatalf("dig *.apps: %v %q", err, out)
	}
}

// TestReloadAddsAndRemovesNodes: adding a node to the cluster file and
// removing it again changes every instance's unicast peers, but no VIP
// moves and no instance restarts.
func TestReloadAddsAndRemovesNodes(t *testing.T) {
	testnet.RequireRoot(t)
	dir := t.TempDir()
	bin, err := peers.BuildVipstack(dir)
	if err != nil {
		t.Fatal(err)
	}
	topo := testnet.New(t, testnet.Options{Hosts: 3, Prefix: "vsn"})
	cfg := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(cfg, []byte(clusterYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, h := range topo.Hosts[:2] {
		serveIn(t, h, ":6443", true, fmt.Sprintf("ok from master-%d", i))
	}
	serveIn(t, topo.Hosts[2], ":1936", false, "router ready")
	var nodes []*peers.Node
	for i, name := range []string{"master-0", "master-1", "worker-0"} {
		h := topo.Hosts[i]
		n, err := peers.StartCmd(h, h.Command(bin, "node", "--config", cfg, "--node", name, "--state-dir", filepath.Join(dir, name), "--watch-interval", "200ms"))
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, n := range nodes {
				t.Logf("---- node %d log:\n%s", i, testutil.Tail(n.Log(), 30))
			}
		}
	})
	vips := []netip.Addr{netip.MustParseAddr("198.18.0.5"), netip.MustParseAddr("198.18.0.7")}
	holders := func() []*testnet.Host {
		var out []*testnet.Host
		for _, v := range vips {
			hs, err := peers.Holders(topo.Hosts, v)
			if err != nil {
				t.Fatal(err)
			}
			if len(hs) != 1 {
				return nil
			}
			out = append(out, hs[0])
		}
		return out
	}
	var before []*testnet.Host
	for deadline := time.Now().Add(20 * time.Second); before == nil && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		before = holders()
	}
	if before == nil {
		t.Fatal("the VIPs never settled on single holders")
	}
	// Let the checks settle (rise 3 x 2 s) so priorities stop moving.
	time.Sleep(8 * time.Second) // settling the system under test, not a timer of ours
	before = holders()
	watch := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			now := holders()
			if now == nil || now[0] != before[0] || now[1] != before[1] {
				t.Fatalf("a VIP moved or had two holders during the reload: before %v", before)
			}
		}
	}
	grown := clusterYAML + "  - {name: worker-9, role: worker, ips: [198.18.0.99]}\n  - {name: master-9, role: master, ips: [198.18.0.98]}\n"
	if err := os.WriteFile(cfg, []byte(grown), 0o644); err != nil {
		t.Fatal(err)
	}
	watch(3 * time.Second)
	for i, n := range nodes {
		if !strings.Contains(n.Log(), "unicast peers changed") {
			t.Fatalf("node %d did not apply the new peers in place:\n%s", i, testutil.Tail(n.Log(), 20))
		}
		if strings.Contains(n.Log(), "configuration changed") {
			t.Fatalf("node %d restarted an instance:\n%s", i, testutil.Tail(n.Log(), 20))
		}
	}
	if err := os.WriteFile(cfg, []byte(clusterYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	watch(3 * time.Second)
}

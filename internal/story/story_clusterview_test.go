package story_test

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/clusterstatus"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

const clusterViewYAML = `name: cv
baseDomain: example.com
apiVIPs: [198.18.0.5]
ingressVIPs: [198.18.0.7]
machineNetworks: [198.18.0.0/24]
vrrp: {version: 3, advertInterval: 100ms}
ports: {status: 9652}
nodes:
  - {name: master-0, role: master, ips: [198.18.0.11]}
  - {name: worker-0, role: worker, ips: [198.18.0.12]}
  - {name: worker-1, role: worker, ips: [198.18.0.13]}
`

// routerIn serves a stand-in router's /healthz/ready on :1936 in h: 200
// while ready is true, 503 after.
func routerIn(t *testing.T, h *testnet.Host) *atomic.Bool {
	t.Helper()
	var ln net.Listener
	if err := h.Do(func() error {
		var err error
		ln, err = net.Listen("tcp", ":1936")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	ready := new(atomic.Bool)
	ready.Store(true)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ready.Load() {
			http.Error(w, "router stopping", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ready
}

// clusterView runs `vipstack status --cluster` in h and returns its
// output and exit code.
func clusterView(t *testing.T, h *testnet.Host, bin, cfg string, args ...string) (string, int) {
	t.Helper()
	c := h.Command(bin, append([]string{"status", "--cluster", "--config", cfg, "--timeout", "2s"}, args...)...)
	var stderr strings.Builder
	c.Stderr = &stderr
	out, err := c.Output()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out) + stderr.String(), ee.ExitCode()
	}
	t.Fatalf("vipstack status --cluster: %v: %s", err, stderr.String())
	return "", 0
}

func viewOf(t *testing.T, out string) clusterstatus.View {
	t.Helper()
	var v clusterstatus.View
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("-o json: %v:\n%s", err, out)
	}
	return v
}

func vipOfView(v clusterstatus.View, instance string) (clusterstatus.VIP, bool) {
	for _, x := range v.VIPs {
		if x.Instance == instance {
			return x, true
		}
	}
	return clusterstatus.VIP{}, false
}

// TestStoryClusterView runs `vipstack node` on a master and two workers
// serving their status at ports.status: `vipstack status --cluster` on the
// master (a backup of the Ingress VIP) shows the worker holding it; when
// that worker's router check fails the VIP moves and the view names the
// new holder and the failing check; with the old holder's agent stopped
// it shows that node unreachable and exits 1. A host outside the cluster
// file gets 403 from a node's status port.
func TestStoryClusterView(t *testing.T) {
	testnet.RequireRoot(t)
	dir := t.TempDir()
	bin, err := peers.BuildVipstack(dir)
	if err != nil {
		t.Fatal(err)
	}
	topo := testnet.New(t, testnet.Options{Hosts: 3, Client: true, Prefix: "vo2"})
	cfg := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(cfg, []byte(clusterViewYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	m0, w0, w1 := topo.Hosts[0], topo.Hosts[1], topo.Hosts[2]
	serveIn(t, m0, ":6443", true, "ok from master-0")
	ready := map[*testnet.Host]*atomic.Bool{w0: routerIn(t, w0), w1: routerIn(t, w1)}
	names := map[*testnet.Host]string{m0: "master-0", w0: "worker-0", w1: "worker-1"}
	nodes := map[*testnet.Host]*peers.Node{}
	for _, h := range topo.Hosts {
		n, err := peers.StartCmd(h, h.Command(bin, "node", "--config", cfg, "--node", names[h], "--state-dir", filepath.Join(dir, names[h])))
		if err != nil {
			t.Fatal(err)
		}
		nodes[h] = n
	}
	t.Cleanup(func() {
		if t.Failed() {
			for h, n := range nodes {
				t.Logf("---- %s log:\n%s", names[h], testutil.Tail(n.Log(), 30))
			}
		}
	})
	api, ingress := netip.MustParseAddr("198.18.0.5"), netip.MustParseAddr("198.18.0.7")
	if _, err := peers.WaitSoleHolder(topo.Hosts, api, m0, time.Second, 30*time.Second); err != nil {
		t.Fatalf("API VIP: %v", err)
	}
	var holder *testnet.Host
	for deadline := time.Now().Add(30 * time.Second); holder == nil && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if hs, err := peers.Holders(topo.Hosts, ingress); err == nil && len(hs) == 1 && hs[0] != m0 {
			holder = hs[0]
		}
	}
	if holder == nil {
		t.Fatal("the Ingress VIP never settled on one worker")
	}
	other := map[*testnet.Host]*testnet.Host{w0: w1, w1: w0}[holder]

	// Settled: one holder each, every node answers, exit 0.
	var out string
	var code int
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if out, code = clusterView(t, m0, bin, cfg, "-o", "json"); code == 0 {
			break
		}
	}
	if code != 0 {
		t.Fatalf("status --cluster on a settled cluster: exit %d:\n%s", code, out)
	}
	v := viewOf(t, out)
	if x, _ := vipOfView(v, "cv_INGRESS"); !slices.Equal(x.Holders, []string{names[holder]}) {
		t.Fatalf("Ingress VIP holders %v, want [%s]:\n%s", x.Holders, names[holder], out)
	}
	table, _ := clusterView(t, m0, bin, cfg)
	t.Logf("settled:\n%s", table)

	// The holder's router check fails: the VIP moves to the other worker.
	ready[holder].Store(false)
	if _, err := peers.WaitSoleHolder(topo.Hosts, ingress, other, 500*time.Millisecond, 20*time.Second); err != nil {
		t.Fatalf("after %s's router check failed: %v", names[holder], err)
	}
	var x clusterstatus.VIP
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		out, code = clusterView(t, m0, bin, cfg, "-o", "json")
		if x, _ = vipOfView(viewOf(t, out), "cv_INGRESS"); slices.Equal(x.Holders, []string{names[other]}) {
			break
		}
	}
	if code != 0 || !slices.Equal(x.Holders, []string{names[other]}) {
		t.Fatalf("after the move: exit %d, holders %v, want [%s]:\n%s", code, x.Holders, names[other], out)
	}
	if !failingCheck(x, names[holder], "chk_ingress") {
		t.Errorf("the view does not name %s's failing chk_ingress:\n%s", names[holder], out)
	}
	table, code = clusterView(t, m0, bin, cfg)
	t.Logf("after %s's router check failed (exit %d):\n%s", names[holder], code, table)
	if !strings.Contains(table, names[holder]+" chk_ingress failing: ") {
		t.Errorf("the table does not say why %s's chk_ingress fails", names[holder])
	}

	// Outside the cluster file: refused.
	// (Dialled in the namespace's thread: http.Transport dials on others.)
	var answer string
	if err := topo.Client.Do(func() error {
		c, err := net.DialTimeout("tcp", "198.18.0.11:9652", 3*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(3 * time.Second))
		io.WriteString(c, "GET /status HTTP/1.0\r\n\r\n")
		b, err := io.ReadAll(c)
		answer = string(b)
		return err
	}); err != nil || !strings.HasPrefix(answer, "HTTP/1.0 403 ") {
		t.Errorf("status port from a host outside the cluster: %v %q, want 403", err, answer)
	}

	// The old holder's agent stops: unreachable, exit 1.
	if err := nodes[holder].Term(); err != nil {
		t.Fatal(err)
	}
	out, code = clusterView(t, m0, bin, cfg, "-o", "json")
	v = viewOf(t, out)
	if code != 1 {
		t.Errorf("with %s stopped: exit %d, want 1", names[holder], code)
	}
	for _, n := range v.Nodes {
		if n.Name == names[holder] && n.Reachable {
			t.Errorf("%s stopped but shown reachable:\n%s", names[holder], out)
		}
	}
	if x, _ = vipOfView(v, "cv_INGRESS"); !slices.Equal(x.Holders, []string{names[other]}) {
		t.Errorf("with %s stopped: holders %v, want [%s]", names[holder], x.Holders, names[other])
	}
	table, code = clusterView(t, m0, bin, cfg)
	t.Logf("with %s stopped (exit %d):\n%s", names[holder], code, table)
}

// failingCheck reports whether node's member of x names check as failing.
func failingCheck(x clusterstatus.VIP, node, check string) bool {
	for _, m := range x.Members {
		if m.Node != node {
			continue
		}
		for _, c := range m.Failing {
			if c.Name == check {
				return true
			}
		}
	}
	return false
}

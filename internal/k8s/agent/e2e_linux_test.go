package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/agent"
	"github.com/vipstack/vipstack/internal/k8s/controller"
	"github.com/vipstack/vipstack/internal/k8s/k8stest"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/kubetest"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// TestMain removes the binary vipstackBin built.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// vipstackBin builds cmd/vipstack once per test run.
func vipstackBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vsO-bin-")
		if err != nil {
			binErr = err
			return
		}
		if binPath, binErr = peers.BuildVipstack(dir); binErr != nil {
			os.RemoveAll(dir)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// apiProxy listens on the host namespace's loopback and forwards every
// connection to the API server on the test process's loopback, so an
// agent inside the namespace reaches the API without any route out.
func apiProxy(t *testing.T, h *testnet.Host, target string) string {
	t.Helper()
	var ln net.Listener
	if err := h.Do(func() (err error) {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer up.Close()
				go func() { _, _ = io.Copy(up, c) }()
				_, _ = io.Copy(c, up)
			}()
		}
	}()
	return ln.Addr().String()
}

// nameServer answers every connection on :8080 in the host's namespace
// with the node's name, standing in for kube-proxy and a backend.
func nameServer(t *testing.T, h *testnet.Host, name string) {
	t.Helper()
	var ln net.Listener
	if err := h.Do(func() (err error) {
		ln, err = net.Listen("tcp", ":8080")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte(name))
			c.Close()
		}
	}()
}

// fetch connects to vip:8080 from the client namespace and returns what
// the node holding the address answers.
func fetch(h *testnet.Host, vip netip.Addr) (string, error) {
	var conn net.Conn
	if err := h.Do(func() (err error) {
		conn, err = net.DialTimeout("tcp", netip.AddrPortFrom(vip, 8080).String(), time.Second)
		return err
	}); err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	b, err := io.ReadAll(conn)
	return string(b), err
}

// agentProc is one `vipstack agent` process in a host namespace.
type agentProc struct {
	cmd  *exec.Cmd
	log  *lockedBuffer
	done chan struct{}
}

// agentCaps are the capabilities deploy/agent.yaml gives the agent (it
// drops ALL and adds these two): the agents here run with only those.
var agentCaps = []int{testnet.CapNetAdmin, testnet.CapNetRaw}

func startAgent(t *testing.T, h *testnet.Host, node, kubeconfig string) *agentProc {
	t.Helper()
	argv, err := testnet.CapshPrefix(agentCaps...)
	if err != nil {
		t.Fatal(err)
	}
	argv = append(argv, vipstackBin(t), "agent", "--kubeconfig", kubeconfig, "--node-name", node, "--no-supervisor",
		"--state-dir", t.TempDir(), "--metrics-addr", "127.0.0.1:9650", "--status-addr", "127.0.0.1:9653", "--log-level", "debug")
	c := h.Command(argv[0], argv[1:]...)
	c.Env = []string{"PATH=" + os.Getenv("PATH")}
	p := &agentProc{cmd: c, log: &lockedBuffer{}, done: make(chan struct{})}
	c.Stdout, c.Stderr = p.log, p.log
	if err := h.StartFor(t, c); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = c.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- agent %s log (tail):\n%s", node, tail(p.log.String(), 30))
		}
		p.kill()
	})
	return p
}

func (p *agentProc) kill() {
	if p.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// agentKubeconfig writes a kubeconfig that reaches the API through the
// namespace's proxy and acts as the agent's ServiceAccount.
func agentKubeconfig(t *testing.T, env *kubetest.Env, proxy string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfigAs(path, proxy, "vipstack-system", "vipstack-agent"); err != nil {
		t.Fatal(err)
	}
	return path
}

// holders returns the hosts whose link carries vip.
func holders(t *testing.T, hosts []*testnet.Host, names []string, vip netip.Addr) []string {
	t.Helper()
	var out []string
	for i, h := range hosts {
		ok, err := h.HasAddr(vip)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			out = append(out, names[i])
		}
	}
	return out
}

// TestEndToEnd: a real API server, the controller, and agents in three
// network namespaces. A LoadBalancer Service's address answers from a
// client namespace; when the node holding it dies (agent killed, link
// cut) another takes it over; the node comes back and takes it back; when
// the Service is deleted the address leaves every node.
func TestEndToEnd(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 3, Client: true, Prefix: "vsO"})
	env := kubetest.Start(t)
	admin := k8stest.Client(t, env.Config)
	k8stest.InstallCRDs(t, admin)
	ctx := t.Context()
	if err := k8stest.Apply(ctx, admin, k8stest.Objects(t, "rbac.yaml"), false); err != nil {
		t.Fatal(err)
	}
	mk := func(o client.Object) {
		t.Helper()
		if err := admin.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	for _, ns := range []string{"infra", "demo"} {
		mk(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	names := []string{"n1", "n2", "n3"}
	for i, h := range topo.Hosts {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: names[i], Labels: map[string]string{"vipstack.io/lb": "true"}}}
		mk(n)
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: h.IPv4.Addr().String()}}
		if err := admin.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	auto := true
	mk(&v1alpha1.IPPool{ObjectMeta: metav1.ObjectMeta{Name: "lan"},
		Spec: v1alpha1.IPPoolSpec{Addresses: []string{"198.18.0.200-198.18.0.209"}, AutoAssign: &auto}})
	mk(&v1alpha1.VIPGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "workers"},
		Spec: v1alpha1.VIPGroupSpec{NodeSelector: map[string]string{"vipstack.io/lb": "true"}, AdvertIntervalMilliseconds: 200}})

	// The controller, in this process, as its ServiceAccount.
	clog := &lockedBuffer{}
	ccfg := env.ConfigAs("system:serviceaccount:vipstack-system:vipstack-controller", "system:serviceaccounts", "system:serviceaccounts:vipstack-system")
	mgr, err := controller.NewManager(ccfg, controller.ManagerOptions{Logger: slog.New(slog.NewTextHandler(clog, nil)),
		LeaderElection: true, LeaderElectionNamespace: "vipstack-system"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := controller.Setup(mgr, controller.Options{Logger: slog.New(slog.NewTextHandler(clog, nil))}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	cdone := make(chan error, 1)
	go func() { cdone <- mgr.Start(cctx) }()
	t.Cleanup(func() {
		cancel()
		<-cdone
		if t.Failed() {
			t.Logf("---- controller log (tail):\n%s", tail(clog.String(), 30))
		}
	})

	apiHost := strings.TrimPrefix(env.Config.Host, "https://")
	agents := make([]*agentProc, 3)
	kubeconfigs := make([]string, 3)
	for i, h := range topo.Hosts {
		nameServer(t, h, names[i])
		kubeconfigs[i] = agentKubeconfig(t, env, apiProxy(t, h, apiHost))
		agents[i] = startAgent(t, h, names[i], kubeconfigs[i])
	}

	// Before any Service: each node is already elected master of its own
	// instance, so the first address goes up without waiting an election.
	for i, h := range topo.Hosts {
		own := "infra/workers/node/" + names[i] + "/v4"
		k8stest.Eventually(t, 30*time.Second, func() error {
			out, err := h.Run("curl", "-sf", "http://127.0.0.1:9653/status")
			if err != nil {
				return fmt.Errorf("%s's status: %v", names[i], err)
			}
			var st agent.Status
			if err := json.Unmarshal([]byte(out), &st); err != nil {
				return err
			}
			for _, in := range st.Instances {
				if in.Name == own {
					if in.State != "MASTER" || len(in.VIPs) != 0 {
						return fmt.Errorf("%s: %s is %s holding %v, want MASTER holding nothing yet", names[i], own, in.State, in.VIPs)
					}
					return nil
				}
			}
			return fmt.Errorf("%s runs no %s before the group's first Service", names[i], own)
		})
	}

	// Each agent runs with exactly the DaemonSet's capabilities.
	want := testnet.CapMask(agentCaps...)
	for i, p := range agents {
		inh, prm, eff, bnd, amb, err := testnet.Caps(p.cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if got := []string{inh, prm, eff, bnd, amb}; !slices.Equal(got, []string{want, want, want, want, want}) {
			t.Errorf("agent %s: capability sets inh/prm/eff/bnd/amb %v, want all %s (NET_ADMIN, NET_RAW)", names[i], got, want)
		}
	}

	f := false
	mk(&corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web", Annotations: map[string]string{k8s.GroupAnnotation: "infra/workers"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, AllocateLoadBalancerNodePorts: &f,
			Ports: []corev1.ServicePort{{Port: 8080}}},
	})
	var vip netip.Addr
	k8stest.Eventually(t, 30*time.Second, func() error {
		var s corev1.Service
		if err := admin.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "web"}, &s); err != nil {
			return err
		}
		if len(s.Status.LoadBalancer.Ingress) != 1 {
			return errors.New("no address yet")
		}
		vip = netip.MustParseAddr(s.Status.LoadBalancer.Ingress[0].IP)
		return nil
	})
	if vip != netip.MustParseAddr("198.18.0.200") {
		t.Fatalf("address %s, want the pool's first, 198.18.0.200", vip)
	}

	var holder int
	if !t.Run("the address answers from a client namespace", func(t *testing.T) {
		k8stest.Eventually(t, 30*time.Second, func() error {
			hs := holders(t, topo.Hosts, names, vip)
			if len(hs) != 1 {
				var g v1alpha1.VIPGroup
				_ = admin.Get(ctx, client.ObjectKey{Namespace: "infra", Name: "workers"}, &g)
				return fmt.Errorf("held by %v, want exactly one node (group status %+v)", hs, g.Status)
			}
			got, err := fetch(topo.Client, vip)
			if err != nil {
				return err
			}
			if got != hs[0] {
				return fmt.Errorf("answer from %q, the holder is %s", got, hs[0])
			}
			for i, n := range names {
				if n == got {
					holder = i
				}
			}
			return nil
		})
		t.Logf("%s is held by %s", vip, names[holder])
	}) {
		t.FailNow()
	}

	if !t.Run("the holder dies: another node takes over", func(t *testing.T) {
		agents[holder].kill()
		if err := topo.Hosts[holder].Cut(true); err != nil {
			t.Fatal(err)
		}
		var others []*testnet.Host
		var otherNames []string
		for i, h := range topo.Hosts {
			if i != holder {
				others, otherNames = append(others, h), append(otherNames, names[i])
			}
		}
		k8stest.Eventually(t, 30*time.Second, func() error {
			hs := holders(t, others, otherNames, vip)
			if len(hs) != 1 {
				return fmt.Errorf("held by %v among the survivors, want exactly one", hs)
			}
			got, err := fetch(topo.Client, vip)
			if err != nil {
				return err
			}
			if got != hs[0] {
				return fmt.Errorf("answer from %q, the new holder is %s", got, hs[0])
			}
			return nil
		})
	}) {
		t.FailNow()
	}

	// The node comes back: link restored, agent restarted (registered with
	// the whole test, so it outlives the subtest). Its engine first sweeps
	// the address the killed agent left behind.
	if err := topo.Hosts[holder].Cut(false); err != nil {
		t.Fatal(err)
	}
	agents[holder] = startAgent(t, topo.Hosts[holder], names[holder], kubeconfigs[holder])
	if !t.Run("the node comes back and takes its address back", func(t *testing.T) {
		k8stest.Eventually(t, 30*time.Second, func() error {
			hs := holders(t, topo.Hosts, names, vip)
			if len(hs) != 1 || hs[0] != names[holder] {
				return fmt.Errorf("held by %v, want %s alone (its preferred master)", hs, names[holder])
			}
			got, err := fetch(topo.Client, vip)
			if err != nil {
				return err
			}
			if got != names[holder] {
				return fmt.Errorf("answer from %q", got)
			}
			return nil
		})
	}) {
		t.FailNow()
	}

	if !t.Run("a second Service in another instance does not disturb the first", func(t *testing.T) {
		// Pick the second address so that it lands in another instance
		// than the first: that instance changes, the first one's does not
		// and keeps running untouched (the engine keeps unchanged instances
		// on reload). Watch the first address all along.
		var g v1alpha1.VIPGroup
		if err := admin.Get(ctx, client.ObjectKey{Namespace: "infra", Name: "workers"}, &g); err != nil {
			t.Fatal(err)
		}
		var ins []k8s.Instance
		for _, in := range g.Status.Instances {
			ins = append(ins, k8s.Instance{Name: in.Name, VRID: int(in.VRID), Node: in.Node})
		}
		first, _ := k8s.Place(vip, ins)
		second := netip.Addr{}
		for a := netip.MustParseAddr("198.18.0.201"); a.Compare(netip.MustParseAddr("198.18.0.209")) <= 0; a = a.Next() {
			if in, _ := k8s.Place(a, ins); in.Name != first.Name {
				second = a
				break
			}
		}
		if !second.IsValid() {
			t.Fatal("no address of the pool lands in another instance")
		}
		stop := make(chan struct{})
		moved := make(chan string, 1)
		go func() {
			for {
				select {
				case <-stop:
					close(moved)
					return
				case <-time.After(20 * time.Millisecond):
				}
				if hs := holders(t, topo.Hosts, names, vip); len(hs) != 1 || hs[0] != names[holder] {
					moved <- fmt.Sprintf("%s was held by %v while the second Service came, want %s all along", vip, hs, names[holder])
					<-stop
					close(moved)
					return
				}
			}
		}()
		s := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "api", Annotations: map[string]string{k8s.GroupAnnotation: "infra/workers"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, AllocateLoadBalancerNodePorts: &f, LoadBalancerIP: second.String(),
				Ports: []corev1.ServicePort{{Port: 8080}}},
		}
		mk(s)
		err := k8stest.Poll(30*time.Second, func() error {
			if hs := holders(t, topo.Hosts, names, second); len(hs) != 1 {
				return fmt.Errorf("%s held by %v, want one node", second, hs)
			}
			_, err := fetch(topo.Client, second)
			return err
		})
		// Keep watching a little after the new instance settled.
		time.Sleep(time.Second)
		close(stop)
		if msg, ok := <-moved; ok {
			t.Error(msg)
		}
		if err != nil {
			t.Fatal(err)
		}
	}) {
		t.FailNow()
	}

	// A new address in the instance of an existing one changes only that
	// instance's address list, which the engine applies in place: the
	// existing address must stay held by the same node throughout.
	if !t.Run("a third Service in the same instance as the first", func(t *testing.T) {
		var g v1alpha1.VIPGroup
		if err := admin.Get(ctx, client.ObjectKey{Namespace: "infra", Name: "workers"}, &g); err != nil {
			t.Fatal(err)
		}
		var ins []k8s.Instance
		for _, in := range g.Status.Instances {
			ins = append(ins, k8s.Instance{Name: in.Name, VRID: int(in.VRID), Node: in.Node})
		}
		first, _ := k8s.Place(vip, ins)
		third := netip.Addr{}
		for a := netip.MustParseAddr("198.18.0.202"); a.Compare(netip.MustParseAddr("198.18.0.209")) <= 0; a = a.Next() {
			if in, _ := k8s.Place(a, ins); in.Name == first.Name {
				third = a
				break
			}
		}
		if !third.IsValid() {
			t.Skip("no address of the pool lands in the first one's instance")
		}
		var seen []string
		twice := false
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			last := ""
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				list := holders(t, topo.Hosts, names, vip)
				if len(list) != 1 {
					twice = true // two holders, or none: either disturbs the first Service
				}
				hs := fmt.Sprint(list)
				if hs != last {
					seen = append(seen, time.Now().Format("15:04:05.000")+" "+hs)
					last = hs
				}
			}
		}()
		mk(&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "third", Annotations: map[string]string{k8s.GroupAnnotation: "infra/workers"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, AllocateLoadBalancerNodePorts: &f, LoadBalancerIP: third.String(),
				Ports: []corev1.ServicePort{{Port: 8080}}},
		})
		err := k8stest.Poll(30*time.Second, func() error {
			if hs := holders(t, topo.Hosts, names, third); len(hs) != 1 {
				return fmt.Errorf("%s held by %v", third, hs)
			}
			return nil
		})
		time.Sleep(3 * time.Second)
		close(stop)
		<-done
		t.Logf("holders of %s while %s joined its instance: %v", vip, third, seen)
		if err != nil {
			t.Fatal(err)
		}
		if twice {
			t.Errorf("%s was not held by exactly one node throughout: %v", vip, seen)
		}
		if hs := holders(t, topo.Hosts, names, vip); len(hs) != 1 || hs[0] != names[holder] {
			t.Errorf("%s is held by %v at the end, want %s", vip, hs, names[holder])
		}
	}) {
		t.FailNow()
	}

	if !t.Run("delete the Service: the address leaves every node", func(t *testing.T) {
		if err := admin.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web"}}); err != nil {
			t.Fatal(err)
		}
		k8stest.Eventually(t, 30*time.Second, func() error {
			if hs := holders(t, topo.Hosts, names, vip); len(hs) != 0 {
				return fmt.Errorf("still held by %v", hs)
			}
			return nil
		})
		if _, err := fetch(topo.Client, vip); err == nil {
			t.Errorf("%s still answers", vip)
		}
	}) {
		t.FailNow()
	}
}

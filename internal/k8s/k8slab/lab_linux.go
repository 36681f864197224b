package k8slab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
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

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/chart"
	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/agent"
	"github.com/vipstack/vipstack/internal/k8s/k8stest"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/kubetest"
	"github.com/vipstack/vipstack/internal/procfs"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// Group is the lab's VIPGroup ("namespace/name") and ServiceNamespace the
// namespace of its Services.
const (
	Group            = "infra/lab"
	ServiceNamespace = "lab"
	statusAddr       = "127.0.0.1:9653"
	healthAddr       = "127.0.0.1:9655"
	metricsAddr      = "127.0.0.1:9654"
)

// Options describe a lab.
type Options struct {
	Nodes  int    // nodes in the group (1..20)
	Prefix string // namespace name prefix (testnet.Options.Prefix)
	Bin    string // the vipstack binary
	// Advert is the VIPGroup's advertisement interval (a multiple of 10 ms).
	Advert time.Duration
	// Services is how many LoadBalancer Services to create, each asking for
	// the pool's next address (198.18.0.200 on), at most 40.
	Services int
	// Supervisor runs each agent under its supervisor (the default of
	// `vipstack agent`); false passes --no-supervisor.
	Supervisor bool
	// Caps runs each agent with only the DaemonSet's NET_ADMIN and NET_RAW
	// (needs capsh).
	Caps bool
	// Pool is the IPPool's addresses (a range or a CIDR block, autoAssign);
	// empty: Pool. Services needs the default, since Service i asks for
	// PoolAddr(i).
	Pool string
	// Client adds a client namespace on the bridge (Topo.Client).
	Client bool
	// LeaderElect runs the controller with leader election, as deployed;
	// false (the default) runs it without, so that a restart acts at once
	// rather than after the killed leader's Lease expires.
	LeaderElect bool
	// Log receives progress lines; nil: none.
	Log io.Writer
	// Before runs once the lab's own objects exist and before the
	// controller starts: a migration test applies there what another
	// load balancer left in the cluster.
	Before func(ctx context.Context, admin client.Client) error
	// ControllerArgs are added to the controller's command line.
	ControllerArgs []string
	// AgentArgs are added to each agent's command line.
	AgentArgs []string
	// Standby runs a second controller beside the first, both with leader
	// election (LeaderElect is implied) and short Lease timings
	// (StandbyLease): KillLeader kills the one holding the Lease and the
	// other takes over.
	Standby bool
	// Endpoints gives each Service an EndpointSlice with a ready endpoint
	// on every node, so that externalTrafficPolicy Local (EditPolicy)
	// keeps every node eligible.
	Endpoints bool
	// AutoAssign leaves the odd-numbered Services without a requested
	// address: the controller picks one from the pool (VIPs records it).
	AutoAssign bool
	// DualStack runs a dual-stack API server (Services may have IPv6
	// addresses) and gives each Node its IPv6 InternalIP (Host.IPv6)
	// after its IPv4 one.
	DualStack bool
}

// StandbyLease is the controllers' Lease duration with Options.Standby
// (renew deadline 3/4 of it, retry period 1/6): a killed leader's
// standby takes over within about this time.
const StandbyLease = 6 * time.Second

// Pool is the lab's IPPool range unless Options.Pool says otherwise;
// Service i asks for PoolAddr(i).
const Pool = "198.18.0.200-198.18.0.239"

// PoolAddr is the address Service i asks for.
func PoolAddr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{198, 18, 0, byte(200 + i)})
}

// Lab is a running lab.
type Lab struct {
	Topo  *testnet.Topology
	Env   *kubetest.Env
	Admin client.Client
	Nodes []*Node
	Dir   string
	// VIPs are the Services' addresses, by Service index.
	VIPs []netip.Addr

	o       Options
	ctrlCfg string

	mu      sync.Mutex
	ctrls   [2]*proc // the controller; the standby (Options.Standby)
	ctrlOff [2]int64 // where each one's log began at its last start
}

// Node is one node of the lab: a namespace and its agent.
type Node struct {
	Name string
	Host *testnet.Host

	lab        *Lab
	kubeconfig string
	stateDir   string
	logPath    string
	nsh        netns.NsHandle
	nl         *netlink.Handle
	status     *http.Client
	api        *apiProxy

	mu    sync.Mutex
	agent *proc
}

// proc is a process the lab started, in its own process group.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *proc) running() bool {
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL to p's process group and waits (bounded) for it.
func (p *proc) kill() error {
	if p == nil || p.cmd.Process == nil {
		return nil
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("pid %d still runs 10 s after SIGKILL", p.cmd.Process.Pid)
	}
}

// Start builds the lab and waits until every node is elected master of its
// own (empty) instance and every Service's address is held by exactly one
// node. Everything is removed when t's cleanups run.
func Start(ctx context.Context, t testing.TB, o Options) *Lab {
	t.Helper()
	switch {
	case o.Nodes < 1 || o.Nodes > 20:
		t.Fatalf("k8slab: Options.Nodes = %d: want 1..20", o.Nodes)
	case o.Services < 0 || o.Services > 40:
		t.Fatalf("k8slab: Options.Services = %d: want 0..40 (the pool %s)", o.Services, Pool)
	case o.Advert < 10*time.Millisecond || o.Advert%(10*time.Millisecond) != 0:
		t.Fatalf("k8slab: Options.Advert = %v: want a multiple of 10ms", o.Advert)
	case o.Bin == "":
		t.Fatalf("k8slab: Options.Bin is empty: want the vipstack binary")
	case o.AutoAssign && o.Services > 20:
		t.Fatalf("k8slab: Options.Services = %d with AutoAssign: want at most 20 (SpareAddr needs the pool's upper half)", o.Services)
	case o.Pool != "" && o.Services > 0:
		t.Fatalf("k8slab: Options.Pool = %q with Options.Services = %d: want the default pool (%s) for the lab's own Services, or no Services", o.Pool, o.Services, Pool)
	}
	l := &Lab{o: o}
	var err error
	if l.Dir, err = os.MkdirTemp("", "vipstack-k8slab-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(l.Dir) })
	if l.Topo, err = testnet.Build(testnet.Options{Hosts: o.Nodes, Client: o.Client, Prefix: o.Prefix}); err != nil {
		t.Fatalf("k8slab: %v", err)
	}
	t.Cleanup(l.Topo.Close)
	t.Cleanup(l.stopAll)
	l.logf("starting etcd and kube-apiserver")
	l.Env = kubetest.StartWith(t, kubetest.Options{DualStack: o.DualStack})
	l.Admin = k8stest.Client(t, l.Env.Config)
	k8stest.InstallCRDs(t, l.Admin)
	if err := k8stest.Apply(ctx, l.Admin, k8stest.Objects(t, "rbac.yaml"), false); err != nil {
		t.Fatalf("k8slab: rbac: %v", err)
	}
	if err := l.objects(ctx); err != nil {
		t.Fatalf("k8slab: %v", err)
	}
	if o.Before != nil {
		if err := o.Before(ctx, l.Admin); err != nil {
			t.Fatalf("k8slab: Options.Before: %v", err)
		}
	}
	if l.ctrlCfg, err = l.kubeconfig("controller", "", "vipstack-controller"); err != nil {
		t.Fatalf("k8slab: %v", err)
	}
	if o.Standby {
		l.o.LeaderElect = true
	}
	if err := l.StartController(); err != nil {
		t.Fatalf("k8slab: %v", err)
	}
	if o.Standby {
		if err := l.startController(1); err != nil {
			t.Fatalf("k8slab: %v", err)
		}
	}
	apiHost := strings.TrimPrefix(l.Env.Config.Host, "https://")
	for i, h := range l.Topo.Hosts {
		n := &Node{Name: fmt.Sprintf("n%d", i+1), Host: h, lab: l}
		if err := n.open(); err != nil {
			t.Fatalf("k8slab: %v", err)
		}
		t.Cleanup(n.close)
		if n.api, err = l.proxy(h, apiHost); err != nil {
			t.Fatalf("k8slab: %v", err)
		}
		if n.kubeconfig, err = l.kubeconfig(n.Name, n.api.ln.Addr().String(), "vipstack-agent"); err != nil {
			t.Fatalf("k8slab: %v", err)
		}
		n.stateDir = filepath.Join(l.Dir, "state-"+n.Name)
		n.logPath = filepath.Join(l.Dir, n.Name+".log")
		if err := os.MkdirAll(n.stateDir, 0o700); err != nil {
			t.Fatal(err)
		}
		l.Nodes = append(l.Nodes, n)
	}
	for _, n := range l.Nodes {
		if err := n.StartAgent(); err != nil {
			t.Fatalf("k8slab: %v", err)
		}
	}
	if err := l.waitMasters(ctx); err != nil {
		t.Fatalf("k8slab: %v", err)
	}
	for i := range o.Services {
		if !o.Endpoints {
			break
		}
		if err := l.endpoints(ctx, i); err != nil {
			t.Fatalf("%v", err)
		}
	}
	// Services asking for an address first, so that those the controller
	// picks for cannot take one of theirs.
	l.VIPs = make([]netip.Addr, o.Services)
	for i := range o.Services {
		if o.AutoAssign && i%2 == 1 {
			continue
		}
		l.VIPs[i] = PoolAddr(i)
		if err := l.CreateService(ctx, i); err != nil {
			t.Fatalf("k8slab: %v", err)
		}
	}
	for i := range o.Services {
		if l.VIPs[i].IsValid() {
			continue
		}
		if err := l.Admin.Create(ctx, NewService(ServiceName(i), netip.Addr{})); err != nil {
			t.Fatalf("k8slab: create Service %s: %v", ServiceName(i), err)
		}
		if err := testutil.Poll(60*time.Second, func() error {
			addrs, err := l.ServiceAddrs(ctx)
			if err != nil {
				return err
			}
			if a := addrs[ServiceName(i)]; len(a) != 1 {
				return fmt.Errorf("the Service %s has addresses %v, want one", ServiceName(i), a)
			}
			l.VIPs[i] = addrs[ServiceName(i)][0]
			return nil
		}); err != nil {
			t.Fatalf("k8slab: %v", err)
		}
		for j := range o.Services {
			if l.VIPs[i] == SpareAddr(j) {
				t.Fatalf("k8slab: Service %s got %s, Service %s's spare address", ServiceName(i), l.VIPs[i], ServiceName(j))
			}
		}
	}
	l.logf("waiting for the %d Services' addresses", o.Services)
	if err := l.WaitHeld(ctx, time.Second, 60*time.Second); err != nil {
		t.Fatalf("k8slab: %v", err)
	}
	return l
}

func (l *Lab) logf(format string, args ...any) {
	if l.o.Log != nil {
		fmt.Fprintf(l.o.Log, "%s k8slab: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
	}
}

// objects creates the namespaces, the Nodes (with their InternalIP), the
// IPPool and the VIPGroup.
func (l *Lab) objects(ctx context.Context) error {
	mk := func(o client.Object) error {
		if err := l.Admin.Create(ctx, o); err != nil {
			return fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
		return nil
	}
	ns, _, _ := strings.Cut(Group, "/")
	for _, name := range []string{ns, ServiceNamespace} {
		if err := mk(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			return err
		}
	}
	for i, h := range l.Topo.Hosts {
		nd := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i+1), Labels: map[string]string{"vipstack.io/lb": "true"}}}
		if err := mk(nd); err != nil {
			return err
		}
		nd.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: h.IPv4.Addr().String()}}
		if l.o.DualStack {
			nd.Status.Addresses = append(nd.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: h.IPv6.Addr().String()})
		}
		if err := l.Admin.Status().Update(ctx, nd); err != nil {
			return fmt.Errorf("update node %s status: %w", nd.Name, err)
		}
	}
	auto, pool := true, l.o.Pool
	if pool == "" {
		pool = Pool
	}
	if err := mk(&v1alpha1.IPPool{ObjectMeta: metav1.ObjectMeta{Name: "lab"},
		Spec: v1alpha1.IPPoolSpec{Addresses: []string{pool}, AutoAssign: &auto}}); err != nil {
		return err
	}
	_, name, _ := strings.Cut(Group, "/")
	return mk(&v1alpha1.VIPGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.VIPGroupSpec{NodeSelector: map[string]string{"vipstack.io/lb": "true"},
			AdvertIntervalMilliseconds: int32(l.o.Advert / time.Millisecond)}})
}

// ServiceName is Service i's name.
func ServiceName(i int) string { return fmt.Sprintf("s%02d", i) }

// NewService returns LoadBalancer Service name of the lab's group (in
// ServiceNamespace, port 8080, no node ports), asking for addr, or for the
// pool's next free address if addr is the zero Addr.
func NewService(name string, addr netip.Addr) *corev1.Service {
	f := false
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ServiceNamespace, Name: name, Annotations: map[string]string{k8s.GroupAnnotation: Group}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, AllocateLoadBalancerNodePorts: &f,
			Ports: []corev1.ServicePort{{Port: 8080}}},
	}
	if addr.IsValid() {
		s.Spec.LoadBalancerIP = addr.String()
	}
	return s
}

// CreateService creates LoadBalancer Service i of the lab's group, asking
// for its address (VIPs[i], PoolAddr(i) unless the controller picked it).
func (l *Lab) CreateService(ctx context.Context, i int) error {
	s := NewService(ServiceName(i), l.VIPs[i])
	if err := l.Admin.Create(ctx, s); err != nil {
		return fmt.Errorf("create Service %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// SpareAddr is the address an EditIP edit moves Service i to: the
// pool's upper end, which no Service asks for (PoolAddr(39-i)).
func SpareAddr(i int) netip.Addr { return PoolAddr(39 - i) }

// Edit is a change of a Service that takes its address from the group
// (EditType, EditClass), moves it (EditIP) or keeps it (EditPolicy), and
// is undone later.
type Edit string

// The edits EditService makes.
const (
	// EditType makes the Service a ClusterIP Service; undone, a
	// LoadBalancer again asking for its address.
	EditType Edit = "type"
	// EditClass gives the Service another implementation's
	// loadBalancerClass (through ClusterIP: the class of a LoadBalancer
	// Service cannot change); undone, no class again.
	EditClass Edit = "class"
	// EditIP asks for SpareAddr instead of the Service's address; undone,
	// for its address again.
	EditIP Edit = "ip"
	// EditPolicy sets externalTrafficPolicy Local (every node has a ready
	// endpoint: Options.Endpoints); undone, Cluster.
	EditPolicy Edit = "policy"
)

// ForeignClass is the loadBalancerClass EditClass gives a Service.
const ForeignClass = "example.com/other-lb"

// EditService makes edit e to Service i (on) or undoes it (!on).
func (l *Lab) EditService(ctx context.Context, i int, e Edit, on bool) error {
	key := client.ObjectKey{Namespace: ServiceNamespace, Name: ServiceName(i)}
	// The controller writes the Service too (status, finalizer): read and
	// write again on a conflict.
	update := func(change func(s *corev1.Service)) error {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var s corev1.Service
			if err := l.Admin.Get(ctx, key, &s); err != nil {
				return err
			}
			change(&s)
			return l.Admin.Update(ctx, &s)
		})
		if err != nil {
			return fmt.Errorf("k8slab: edit %s of Service %s: %w", e, key, err)
		}
		return nil
	}
	toClusterIP := func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeClusterIP
		s.Spec.LoadBalancerIP, s.Spec.LoadBalancerClass, s.Spec.AllocateLoadBalancerNodePorts = "", nil, nil
		s.Spec.ExternalTrafficPolicy, s.Spec.HealthCheckNodePort = "", 0
	}
	toLB := func(class *string) func(s *corev1.Service) {
		return func(s *corev1.Service) {
			f := false
			s.Spec.Type, s.Spec.LoadBalancerClass, s.Spec.AllocateLoadBalancerNodePorts = corev1.ServiceTypeLoadBalancer, class, &f
			s.Spec.LoadBalancerIP = l.VIPs[i].String()
		}
	}
	switch e {
	case EditType:
		if on {
			return update(toClusterIP)
		}
		return update(toLB(nil))
	case EditClass:
		if err := update(toClusterIP); err != nil {
			return err
		}
		if on {
			c := ForeignClass
			return update(toLB(&c))
		}
		return update(toLB(nil))
	case EditIP:
		return update(func(s *corev1.Service) {
			s.Spec.LoadBalancerIP = l.VIPs[i].String()
			if on {
				s.Spec.LoadBalancerIP = SpareAddr(i).String()
			}
		})
	case EditPolicy:
		if !l.o.Endpoints {
			return errors.New("k8slab: EditService: a policy edit needs Options.Endpoints (every node eligible under Local)")
		}
		return update(func(s *corev1.Service) {
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
			s.Spec.HealthCheckNodePort = 0
			if on {
				s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			}
		})
	}
	return fmt.Errorf("k8slab: EditService: unknown edit %q (want %s, %s, %s or %s)", e, EditType, EditClass, EditIP, EditPolicy)
}

// ServiceAddrs returns the load-balancer addresses in each lab Service's
// status, by name, as the API server has them.
func (l *Lab) ServiceAddrs(ctx context.Context) (map[string][]netip.Addr, error) {
	var list corev1.ServiceList
	if err := l.Admin.List(ctx, &list, client.InNamespace(ServiceNamespace)); err != nil {
		return nil, fmt.Errorf("k8slab: list Services: %w", err)
	}
	out := map[string][]netip.Addr{}
	for _, s := range list.Items {
		out[s.Name] = []netip.Addr{}
		for _, ing := range s.Status.LoadBalancer.Ingress {
			if a, err := netip.ParseAddr(ing.IP); err == nil {
				out[s.Name] = append(out[s.Name], a)
			}
		}
	}
	return out, nil
}

// endpoints gives Service i an EndpointSlice with a ready endpoint on
// every node, so that it keeps every node eligible under
// externalTrafficPolicy Local (EditPolicy).
func (l *Lab) endpoints(ctx context.Context, i int) error {
	ready := true
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ServiceNamespace, Name: ServiceName(i) + "-lab",
			Labels: map[string]string{discoveryv1.LabelServiceName: ServiceName(i), discoveryv1.LabelManagedBy: "k8slab"}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for j, h := range l.Topo.Hosts {
		node := fmt.Sprintf("n%d", j+1)
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{h.IPv4.Addr().String()},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready}, NodeName: &node})
	}
	port, name := int32(8080), ""
	sl.Ports = []discoveryv1.EndpointPort{{Name: &name, Port: &port}}
	if err := l.Admin.Create(ctx, sl); err != nil {
		return fmt.Errorf("k8slab: create EndpointSlice %s: %w", sl.Name, err)
	}
	return nil
}

// DeleteService deletes Service i.
func (l *Lab) DeleteService(ctx context.Context, i int) error {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ServiceNamespace, Name: ServiceName(i)}}
	if err := l.Admin.Delete(ctx, s); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Service %s/%s: %w", s.Namespace, s.Name, err)
	}
	// Wait (bounded) until it is gone, so that a create right after does
	// not meet the old object.
	return testutil.Poll(30*time.Second, func() error {
		err := l.Admin.Get(ctx, client.ObjectKeyFromObject(s), &corev1.Service{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("k8slab: Service %s/%s still exists", s.Namespace, s.Name)
	})
}

// WaitHeld waits until every address of l.VIPs is held by exactly one node
// and has been for stable.
func (l *Lab) WaitHeld(ctx context.Context, stable, timeout time.Duration) error {
	s, err := l.NewSampler()
	if err != nil {
		return err
	}
	defer s.Close()
	var since time.Time
	return testutil.Poll(timeout, func() error {
		if ctx.Err() != nil {
			return nil
		}
		snaps, err := s.Sample()
		if err != nil {
			return err
		}
		for _, v := range l.VIPs {
			var hs []string
			for i, sn := range snaps {
				for _, a := range sn.Addrs {
					if a == v {
						hs = append(hs, l.Nodes[i].Name)
					}
				}
			}
			if len(hs) != 1 {
				since = time.Time{}
				return fmt.Errorf("%s is held by %v, want one node", v, hs)
			}
		}
		if since.IsZero() {
			since = time.Now()
		}
		if time.Since(since) < stable {
			return fmt.Errorf("settled for %v only", time.Since(since).Round(time.Millisecond))
		}
		return nil
	})
}

// kubeconfig writes a copy of the admin kubeconfig that acts as the
// ServiceAccount vipstack-system/sa and, if server is set, reaches the API
// there.
func (l *Lab) kubeconfig(name, server, sa string) (string, error) {
	path := filepath.Join(l.Dir, "kubeconfig-"+name)
	return path, l.Env.WriteKubeconfigAs(path, server, "vipstack-system", sa)
}

// apiProxy listens on a namespace's loopback and forwards each
// connection to the API server on this process's loopback. It lives as
// long as the lab, across agent restarts; SetAPI cuts it.
type apiProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool
}

func (l *Lab) proxy(h *testnet.Host, target string) (*apiProxy, error) {
	p := &apiProxy{target: target, conns: map[net.Conn]bool{}}
	if err := h.Do(func() (err error) {
		p.ln, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	}); err != nil {
		return nil, fmt.Errorf("API proxy in %s: %w", h.Name, err)
	}
	go func() {
		for {
			c, err := p.ln.Accept()
			if err != nil {
				return
			}
			if !p.track(c, true) {
				c.Close()
				continue
			}
			go func() {
				defer p.track(c, false)
				defer c.Close()
				up, err := net.Dial("tcp", p.target)
				if err != nil {
					return
				}
				if !p.track(up, true) {
					up.Close()
					return
				}
				defer p.track(up, false)
				defer up.Close()
				go func() { _, _ = io.Copy(up, c) }()
				_, _ = io.Copy(c, up)
			}()
		}
	}()
	return p, nil
}

// track adds (or removes) a connection; it refuses one while the proxy is
// down.
func (p *apiProxy) track(c net.Conn, add bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !add {
		delete(p.conns, c)
		return true
	}
	if p.down {
		return false
	}
	p.conns[c] = true
	return true
}

// set cuts the proxy (closing every connection through it) or restores it.
func (p *apiProxy) set(up bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = !up
	if !up {
		for c := range p.conns {
			c.Close()
		}
	}
}

func (p *apiProxy) close() {
	p.set(false)
	p.ln.Close()
}

// start runs l.o.Bin args in h's namespace (the root namespace if h is
// nil), in its own process group, appending its output to logPath.
func (l *Lab) start(h *testnet.Host, logPath string, prefix []string, args ...string) (*proc, error) {
	argv := append(append([]string(nil), prefix...), l.o.Bin)
	argv = append(argv, args...)
	var c *exec.Cmd
	if h != nil {
		c = h.Command(argv[0], argv[1:]...)
	} else {
		c = exec.Command(argv[0], argv[1:]...)
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	c.Env = []string{"PATH=" + os.Getenv("PATH")}
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	c.Stdout, c.Stderr = f, f
	if err := c.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", strings.Join(args, " "), err)
	}
	p := &proc{cmd: c, done: make(chan struct{})}
	go func() {
		_ = c.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// StartController starts `vipstack controller` (one replica, without
// leader election unless Options.LeaderElect or Options.Standby).
func (l *Lab) StartController() error { return l.startController(0) }

func (l *Lab) ctrlLog(i int) string {
	return filepath.Join(l.Dir, []string{"controller.log", "controller-standby.log"}[i])
}

func (l *Lab) startController(i int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctrls[i].running() {
		return fmt.Errorf("k8slab: controller %d still runs", i)
	}
	args := []string{"controller", "--kubeconfig", l.ctrlCfg,
		fmt.Sprintf("--leader-elect=%t", l.o.LeaderElect), "--metrics-addr", "", "--log-level", "info"}
	if l.o.Standby {
		args = append(args, "--leader-elect-lease-duration", StandbyLease.String(),
			"--leader-elect-renew-deadline", (StandbyLease * 3 / 4).String(), "--leader-elect-retry-period", (StandbyLease / 6).String())
	}
	args = append(args, l.o.ControllerArgs...)
	if st, err := os.Stat(l.ctrlLog(i)); err == nil {
		l.ctrlOff[i] = st.Size()
	} else {
		l.ctrlOff[i] = 0
	}
	p, err := l.start(nil, l.ctrlLog(i), nil, args...)
	if err != nil {
		return fmt.Errorf("k8slab: controller: %w", err)
	}
	l.ctrls[i] = p
	return nil
}

// KillController sends SIGKILL to the controller (the first one).
func (l *Lab) KillController() error {
	l.mu.Lock()
	p := l.ctrls[0]
	l.mu.Unlock()
	if !p.running() {
		return errors.New("k8slab: no controller runs")
	}
	if err := p.kill(); err != nil {
		return fmt.Errorf("k8slab: kill -9 the controller: %w", err)
	}
	return nil
}

// leaderLine is what a controller logs (client-go's leaderelection, through
// klog; "Successfully acquired lease"), lowercased, when it takes the Lease.
const leaderLine = "successfully acquired lease"

// Leader returns the index of the running controller (0 or 1) that took
// the Lease since its last start, -1 if none has.
func (l *Lab) Leader() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, p := range l.ctrls {
		if !p.running() {
			continue
		}
		b, err := os.ReadFile(l.ctrlLog(i))
		if err == nil && int64(len(b)) >= l.ctrlOff[i] && strings.Contains(strings.ToLower(string(b[l.ctrlOff[i]:])), leaderLine) {
			return i
		}
	}
	return -1
}

// LeaseName is the controller's leader-election Lease, in
// k8s.DefaultNamespace.
const LeaseName = "vipstack-controller"

// rebuiltLine is what a controller logs once it leads and has read its
// allocations back from the API, before its first reconcile.
const rebuiltLine = "rebuilt from the api"

// ctrlLogHas reports whether controller i's log since its start has line
// (lower case).
func (l *Lab) ctrlLogHas(i int, line string) bool {
	l.mu.Lock()
	off := l.ctrlOff[i]
	l.mu.Unlock()
	b, err := os.ReadFile(l.ctrlLog(i))
	return err == nil && int64(len(b)) >= off && strings.Contains(strings.ToLower(string(b[off:])), line)
}

// LeadsSince reports whether a running controller leads, has rebuilt its
// allocations (it reconciles), and the Lease shows it renewed or acquired
// at or after since. A leader the API
// server's outage kept from renewing still runs, and says it acquired
// the Lease, until its renew deadline passes and it exits: only a
// renewal after the outage shows that some controller leads again.
func (l *Lab) LeadsSince(ctx context.Context, since time.Time) (bool, error) {
	i := l.Leader()
	if i < 0 || !l.ctrlLogHas(i, rebuiltLine) {
		return false, nil
	}
	var lease coordinationv1.Lease
	if err := l.Admin.Get(ctx, client.ObjectKey{Namespace: k8s.DefaultNamespace, Name: LeaseName}, &lease); err != nil {
		return false, err
	}
	for _, t := range []*metav1.MicroTime{lease.Spec.RenewTime, lease.Spec.AcquireTime} {
		if t != nil && !t.Time.Before(since) {
			return true, nil
		}
	}
	return false, nil
}

// KillLeader sends SIGKILL to the controller holding the Lease (Options.
// Standby) and returns its index for RestartController. The Lease stays
// held until it expires: the standby takes over after StandbyLease.
func (l *Lab) KillLeader() (int, error) {
	if !l.o.Standby {
		return -1, errors.New("k8slab: KillLeader: the lab runs no standby (Options.Standby)")
	}
	i := l.Leader()
	if i < 0 {
		return -1, errors.New("k8slab: KillLeader: no running controller holds the Lease")
	}
	l.mu.Lock()
	p := l.ctrls[i]
	l.mu.Unlock()
	if err := p.kill(); err != nil {
		return -1, fmt.Errorf("k8slab: kill -9 the leader (controller %d): %w", i, err)
	}
	return i, nil
}

// RestartController starts controller i (0 or 1) again after a kill.
func (l *Lab) RestartController(i int) error {
	if i < 0 || i > 1 || (i == 1 && !l.o.Standby) {
		return fmt.Errorf("k8slab: RestartController(%d): no such controller", i)
	}
	return l.startController(i)
}

// WaitLeader waits until a running controller holds the Lease, at most
// timeout.
func (l *Lab) WaitLeader(ctx context.Context, timeout time.Duration) error {
	return testutil.Poll(timeout, func() error {
		if ctx.Err() != nil || l.Leader() >= 0 {
			return nil
		}
		return errors.New("k8slab: no running controller holds the Lease")
	})
}

// ControllerPid is the controller's process ID, 0 if it does not run.
func (l *Lab) ControllerPid() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ctrls[0].running() {
		return 0
	}
	return l.ctrls[0].cmd.Process.Pid
}

// ControllerRunning reports whether the controller process is alive (with
// Options.Standby: both of them).
func (l *Lab) ControllerRunning() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ctrls[0].running() && (!l.o.Standby || l.ctrls[1].running())
}

// ControllerIndexRunning reports whether controller i (0, or 1: the
// standby) is alive.
func (l *Lab) ControllerIndexRunning(i int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return i >= 0 && i < len(l.ctrls) && l.ctrls[i].running()
}

// ControllerLog returns the controller's log so far (with Options.Standby,
// the standby's after it).
func (l *Lab) ControllerLog() string {
	b, _ := os.ReadFile(l.ctrlLog(0))
	if l.o.Standby {
		sb, _ := os.ReadFile(l.ctrlLog(1))
		b = append(append(b, "---- standby controller:\n"...), sb...)
	}
	return string(b)
}

// stopAll kills every process the lab started.
func (l *Lab) stopAll() {
	l.mu.Lock()
	cs := l.ctrls
	l.mu.Unlock()
	for _, c := range cs {
		_ = c.kill()
	}
	for _, n := range l.Nodes {
		if n.api != nil {
			n.api.close()
		}
		n.mu.Lock()
		a := n.agent
		n.mu.Unlock()
		_ = a.kill()
	}
}

// ProbeNetem reports whether the kernel has tc netem (probed in the
// first node's namespace).
func (l *Lab) ProbeNetem() bool { return l.Topo.Hosts[0].ProbeNetem() }

func (n *Node) open() error {
	h, err := netns.GetFromName(n.Host.Name)
	if err != nil {
		return fmt.Errorf("open namespace %s: %w", n.Host.Name, err)
	}
	n.nsh = h
	if n.nl, err = netlink.NewHandleAt(h); err != nil {
		return fmt.Errorf("netlink in %s: %w", n.Host.Name, err)
	}
	n.status = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var conn net.Conn
			err := n.Host.Do(func() (err error) {
				conn, err = (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, addr)
				return err
			})
			return conn, err
		},
		MaxIdleConnsPerHost: 1, IdleConnTimeout: 5 * time.Second,
	}}
	return nil
}

func (n *Node) close() {
	if n.nl != nil {
		n.nl.Close()
	}
	if n.nsh.IsOpen() {
		n.nsh.Close()
	}
}

// StartAgent starts the node's agent.
func (n *Node) StartAgent() error {
	if n.AgentRunning() {
		return fmt.Errorf("k8slab: %s: the agent still runs", n.Name)
	}
	prefix, args, err := n.agentArgv()
	if err != nil {
		return err
	}
	p, err := n.lab.start(n.Host, n.logPath, prefix, args...)
	if err != nil {
		return fmt.Errorf("k8slab: %s: %w", n.Name, err)
	}
	n.mu.Lock()
	n.agent = p
	n.mu.Unlock()
	return nil
}

// AgentCommand returns the command StartAgent runs, in the node's
// namespace, for a test that runs a second agent beside the first (the
// surge pod of a rolling update); the lab does not track it.
func (n *Node) AgentCommand() (*exec.Cmd, error) {
	prefix, args, err := n.agentArgv()
	if err != nil {
		return nil, err
	}
	argv := append(append(prefix, n.lab.o.Bin), args...)
	c := n.Host.Command(argv[0], argv[1:]...)
	c.Env = []string{"PATH=" + os.Getenv("PATH")}
	return c, nil
}

// TermAgent sends SIGTERM to the agent (its supervisor, which passes it
// on) and waits for it to exit.
func (n *Node) TermAgent(timeout time.Duration) error {
	p := n.proc()
	if !p.running() {
		return fmt.Errorf("k8slab: %s: no agent runs", n.Name)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("k8slab: %s: SIGTERM the agent: %w", n.Name, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("k8slab: %s: the agent did not exit within %v of SIGTERM; where it hung:\n%s", n.Name, timeout, n.stacks())
	}
}

// stacks ends the agent's engine process (the agent itself without a
// supervisor) with SIGQUIT, whose Go runtime writes every goroutine's
// stack to the agent's log, and returns those that run vipstack's code.
func (n *Node) stacks() string {
	pid := n.EnginePid()
	if pid == 0 {
		return "(no engine process to ask)"
	}
	if err := syscall.Kill(pid, syscall.SIGQUIT); err != nil {
		return fmt.Sprintf("(SIGQUIT to %d: %v)", pid, err)
	}
	// The dump is whole once the process is gone.
	_ = testutil.Poll(5*time.Second, func() error {
		if procfs.Alive(pid) {
			return errors.New("still running")
		}
		return nil
	})
	dump := testutil.Goroutines(n.Log(), "github.com/vipstack/vipstack/")
	if dump == "" {
		return fmt.Sprintf("(process %d wrote no goroutine dump within 5s of SIGQUIT; log tail:\n%s)", pid, testutil.Tail(n.Log(), 20))
	}
	return dump
}

func (n *Node) agentArgv() (prefix, args []string, err error) {
	if n.lab.o.Caps {
		if prefix, err = testnet.CapshPrefix(testnet.CapNetAdmin, testnet.CapNetRaw); err != nil {
			return nil, nil, fmt.Errorf("k8slab: %w", err)
		}
	}
	args = []string{"agent", "--kubeconfig", n.kubeconfig, "--node-name", n.Name, "--state-dir", n.stateDir,
		"--metrics-addr", metricsAddr, "--status-addr", statusAddr, "--health-addr", healthAddr, "--log-level", "info",
		"--publish-namespace", chart.Namespace}
	if !n.lab.o.Supervisor {
		args = append(args, "--no-supervisor")
	}
	return prefix, append(args, n.lab.o.AgentArgs...), nil
}

func (n *Node) proc() *proc {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.agent
}

// AgentPid is the agent's process ID (its supervisor's when it runs under
// one), 0 if it does not run.
func (n *Node) AgentPid() int {
	p := n.proc()
	if !p.running() {
		return 0
	}
	return p.cmd.Process.Pid
}

// AgentRunning reports whether the agent's process is alive.
func (n *Node) AgentRunning() bool { return n.proc().running() }

// EnginePid returns the PID of the process that runs the engine: the
// supervised child under a supervisor, else the agent itself; 0 if none.
func (n *Node) EnginePid() int {
	pid := n.AgentPid()
	if pid == 0 || !n.lab.o.Supervisor {
		return pid
	}
	return procfs.ChildOf(pid)
}

// KillAgent sends SIGKILL to the agent's whole process group (supervisor
// and child): what it configured stays behind until it starts again.
func (n *Node) KillAgent() error {
	p := n.proc()
	if !p.running() {
		return fmt.Errorf("k8slab: %s: no agent runs", n.Name)
	}
	if err := p.kill(); err != nil {
		return fmt.Errorf("k8slab: %s: kill -9 the agent: %w", n.Name, err)
	}
	return nil
}

// KillEngine sends SIGKILL to the supervised child only; the supervisor
// removes what the child held and restarts it. It returns the child's PID.
func (n *Node) KillEngine() (int, error) {
	if !n.lab.o.Supervisor {
		return 0, fmt.Errorf("k8slab: %s: the agent runs without a supervisor", n.Name)
	}
	pid := n.EnginePid()
	if pid == 0 {
		return 0, fmt.Errorf("k8slab: %s: the agent runs no supervised child now", n.Name)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return 0, fmt.Errorf("k8slab: %s: kill -9 pid %d: %w", n.Name, pid, err)
	}
	return pid, nil
}

// Stall stops (SIGSTOP) or continues (SIGCONT) the agent's whole process
// group: a machine descheduled for a while.
func (n *Node) Stall(stop bool) error {
	pid := n.AgentPid()
	if pid == 0 {
		return fmt.Errorf("k8slab: %s: no agent runs", n.Name)
	}
	sig := syscall.SIGCONT
	if stop {
		sig = syscall.SIGSTOP
	}
	if err := syscall.Kill(-pid, sig); err != nil {
		return fmt.Errorf("k8slab: %s: %v to the agent's group %d: %w", n.Name, sig, pid, err)
	}
	return nil
}

// SetCut pulls the node's cable (its switch port goes down) or plugs it
// back. The agent keeps reaching the API (through its loopback proxy).
func (n *Node) SetCut(cut bool) error {
	if err := n.Host.Cut(cut); err != nil {
		return fmt.Errorf("k8slab: %s: %w", n.Name, err)
	}
	return nil
}

// SetAPI cuts the node's way to the API server (every connection through
// its proxy is closed and new ones are refused) or restores it.
func (n *Node) SetAPI(up bool) { n.api.set(up) }

// SetIfUp sets the node's own interface up or down.
func (n *Node) SetIfUp(up bool) error {
	if err := n.Host.SetLink(up); err != nil {
		return fmt.Errorf("k8slab: %s: %w", n.Name, err)
	}
	return nil
}

// Impair drops loss percent of the node's outgoing packets and delays
// them by delay (testnet.Host.Impair); zero loss and delay remove the
// impairment.
func (n *Node) Impair(loss int, delay time.Duration, netem bool) error {
	if err := n.Host.Impair(loss, delay, netem); err != nil {
		return fmt.Errorf("k8slab: %s: %w", n.Name, err)
	}
	return nil
}

// Status fetches the agent's status from its loopback endpoint.
func (n *Node) Status(ctx context.Context) (agent.Status, error) {
	var st agent.Status
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+statusAddr+"/status", nil)
	if err != nil {
		return st, err
	}
	resp, err := n.status.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("k8slab: %s: status: %s", n.Name, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&st); err != nil {
		return st, fmt.Errorf("k8slab: %s: status: %w", n.Name, err)
	}
	return st, nil
}

// Metrics scrapes the agent's --metrics-addr and returns the text.
func (n *Node) Metrics(ctx context.Context) (string, error) {
	code, body, err := n.get(ctx, "http://"+metricsAddr+"/metrics")
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("k8slab: %s: metrics: HTTP %d", n.Name, code)
	}
	return body, err
}

func (n *Node) get(ctx context.Context, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := n.status.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	return resp.StatusCode, string(b), err
}

// Health fetches path (/healthz, /readyz, /readyz/engine) from the
// agent's --health-addr and returns the HTTP status code and the body.
func (n *Node) Health(ctx context.Context, path string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+healthAddr+path, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := n.status.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return 0, "", fmt.Errorf("k8slab: %s: %s: %w", n.Name, path, err)
	}
	return resp.StatusCode, string(b), nil
}

// Log returns the agent's log so far (every run of it).
func (n *Node) Log() string {
	b, _ := os.ReadFile(n.logPath)
	return string(b)
}

// Snapshot is one node as seen from outside at one moment.
type Snapshot struct {
	Addrs  []netip.Addr // the IPv4 addresses on its interface
	Agent  bool         // the agent (its supervisor, if any) runs
	Engine bool         // the process running the engine runs
}

// Sampler takes Snapshots of every node quickly enough to be called every
// 10 ms: the netlink handles stay open, the child's PID is looked up again
// only when it is gone.
type Sampler struct {
	l      *Lab
	engine []int
}

// NewSampler returns a sampler; Close it.
func (l *Lab) NewSampler() (*Sampler, error) {
	return &Sampler{l: l, engine: make([]int, len(l.Nodes))}, nil
}

// Close releases the sampler.
func (s *Sampler) Close() {}

// Sample returns a snapshot of every node, in l.Nodes order.
func (s *Sampler) Sample() ([]Snapshot, error) {
	out := make([]Snapshot, len(s.l.Nodes))
	for i, n := range s.l.Nodes {
		snap := &out[i]
		lk, err := n.nl.LinkByName(n.Host.Link)
		if err != nil {
			return nil, fmt.Errorf("k8slab: %s: %w", n.Name, err)
		}
		addrs, err := n.nl.AddrList(lk, netlink.FAMILY_V4)
		if err != nil {
			return nil, fmt.Errorf("k8slab: %s: list addresses: %w", n.Name, err)
		}
		for _, a := range addrs {
			if ip, ok := netip.AddrFromSlice(a.IP); ok {
				snap.Addrs = append(snap.Addrs, ip.Unmap())
			}
		}
		pid := n.AgentPid()
		snap.Agent = pid != 0
		switch {
		case pid == 0:
			s.engine[i] = 0
		case !s.l.o.Supervisor:
			snap.Engine = true
		default:
			if s.engine[i] == 0 || !procfs.Alive(s.engine[i]) || procfs.PPid(s.engine[i]) != pid {
				s.engine[i] = procfs.ChildOf(pid)
			}
			snap.Engine = s.engine[i] != 0
		}
	}
	return out, nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Fetch connects to vip:port from h's namespace (the lab's client) and
// returns what the node holding the address answers (its name server
// writes and closes).
func Fetch(h *testnet.Host, vip netip.Addr, port uint16) (string, error) {
	var conn net.Conn
	if err := h.Do(func() (err error) {
		conn, err = net.DialTimeout("tcp", netip.AddrPortFrom(vip, port).String(), time.Second)
		return err
	}); err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	b, err := io.ReadAll(conn)
	return string(b), err
}

// waitMasters waits until every node's own IPv4 instance has a master:
// its node, in a preempting group; any one node, in a non-revertive
// group, where a node whose agent came up late does not take its own
// instance from the node that took it first.
func (l *Lab) waitMasters(ctx context.Context) error {
	ns, name, _ := strings.Cut(Group, "/")
	var g v1alpha1.VIPGroup
	if err := l.Admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &g); err != nil {
		return fmt.Errorf("read VIPGroup %s: %w", Group, err)
	}
	anyNode := g.Spec.NonRevertive
	if anyNode {
		l.logf("waiting for every node's own instance to have one master (non-revertive group)")
	} else {
		l.logf("waiting for every node to master its own instance")
	}
	return testutil.Poll(60*time.Second, func() error {
		masters := map[string][]string{} // instance -> nodes where it is MASTER
		for _, n := range l.Nodes {
			if !n.AgentRunning() {
				return fmt.Errorf("the agent of %s exited:\n%s", n.Name, tail(n.Log(), 20))
			}
			st, err := n.Status(ctx)
			if err != nil {
				return fmt.Errorf("%s's status: %w", n.Name, err)
			}
			runs := false
			for _, in := range st.Instances {
				if in.Name == Group+"/node/"+n.Name+"/v4" {
					runs = true
				}
				if in.State == "MASTER" {
					masters[in.Name] = append(masters[in.Name], n.Name)
				}
			}
			if !runs {
				return fmt.Errorf("%s runs no %s yet", n.Name, Group+"/node/"+n.Name+"/v4")
			}
		}
		for _, n := range l.Nodes {
			own := Group + "/node/" + n.Name + "/v4"
			switch m := masters[own]; {
			case len(m) != 1 && anyNode:
				return fmt.Errorf("%s is MASTER on %v, want one node", own, m)
			case !anyNode && !slices.Equal(m, []string{n.Name}):
				return fmt.Errorf("%s is MASTER on %v, want %s", own, m, n.Name)
			}
		}
		return nil
	})
}

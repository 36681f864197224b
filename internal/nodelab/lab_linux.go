package nodelab

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
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/vipstack/vipstack/internal/kubetest"
	"github.com/vipstack/vipstack/internal/testnet"
)

// APIAddr is where the nodes, and pods on them, reach the API server: an
// address of the lab's bridge (in testnet's 198.18.0.0/24, above every
// host), forwarded to the API server on loopback.
var APIAddr = netip.MustParseAddrPort("198.18.0.250:6443")

// cniBinDir holds Debian's containernetworking-plugins.
const cniBinDir = "/usr/lib/cni"

const (
	// readyTimeout bounds how long Start waits for the nodes' runtimes and
	// kubelets (and, with the control plane, for the nodes to be Ready).
	readyTimeout = 3 * time.Minute
	// podSubnetBase is where node N's pods get addresses: 198.19.N.0/24,
	// in podCIDR, below kubetest.ServiceCIDR (198.19.240.0/20).
	podSubnetBase = "198.19.0.0"
	podCIDR       = "198.19.0.0/19"
)

// KubernetesServiceIP is the kubernetes Service's ClusterIP (the first of
// kubetest.ServiceCIDR), which the API server's certificate also carries.
// With Options.KubeProxy, pods reach the API server there as in any
// cluster; without, they need KUBERNETES_SERVICE_HOST and _PORT set to
// APIAddr.
var KubernetesServiceIP = netip.MustParseAddr("198.19.240.1")

// Options describe a lab.
type Options struct {
	// Nodes are the nodes, in bridge order: node i (0-based) is testnet
	// host i+1, at testnet.HostIPv4(i+1).
	Nodes []NodeSpec
	// Client adds testnet's client host on the same bridge.
	Client bool
	// ControlPlane runs kube-apiserver and etcd (internal/kubetest),
	// kube-controller-manager and kube-scheduler, and registers every
	// kubelet with the API server. Without it the kubelets run standalone:
	// static pods only.
	ControlPlane bool
	// Images are OCI archives imported into every node's containerd
	// before its kubelet starts (ImportImage adds more later).
	Images []string
	// KubeProxy runs kube-proxy (nftables mode) on every node, so that
	// ClusterIPs, NodePorts and LoadBalancer addresses reach their
	// endpoints, and the kubernetes Service's ClusterIP reaches the API
	// server. It needs ControlPlane.
	KubeProxy bool
	// Prefix starts the names of the lab's network namespaces (testnet's
	// Options.Prefix; default "vsrn"), so that concurrent runs of
	// different suites tell theirs apart.
	Prefix string
}

// NodeSpec is one node of a lab.
type NodeSpec struct {
	Name   string
	Labels map[string]string // set on the registered Node once it is Ready
}

// Lab is a running set of nodes.
type Lab struct {
	Dir      string // every node's directory, the lab's logs and images
	Tag      string // testnet's tag: the namespaces' shared name part
	Topology *testnet.Topology
	Client   *testnet.Host // nil unless Options.Client
	Nodes    []*Node
	// Kube is the control plane's API server (nil without ControlPlane);
	// Kube.Config reaches it from the test as an admin.
	Kube *kubetest.Env
	// Clientset is a client of Kube (nil without ControlPlane).
	Clientset kubernetes.Interface
	// NodeKubeconfig is the kubeconfig the kubelets use: the admin's
	// credentials, the server at APIAddr.
	NodeKubeconfig string

	t         testing.TB
	bin       string // the Kubernetes binaries
	kubeProxy bool
	procs     []*proc // control plane processes besides kubetest's
	fwd       *forwarder
	sysctls   map[string]string // kernel settings before the kubelets ran
	closeMu   sync.Mutex
	closed    bool
	after     []func() // AfterKill's
}

// AfterKill registers f to run in Close once every process of the lab is
// dead and before the namespaces go: for what the pods leave on the
// machine's file system (hostPath volumes), which a pod still running
// could write again. Call it before the test ends.
func (l *Lab) AfterKill(f func()) {
	l.closeMu.Lock()
	defer l.closeMu.Unlock()
	l.after = append(l.after, f)
}

// Node is one node: a network namespace with a containerd and a kubelet.
type Node struct {
	Name         string
	Index        int // 1-based, testnet's host index
	Host         *testnet.Host
	IP           netip.Addr   // on the lab's bridge
	PodSubnet    netip.Prefix // 198.19.Index.0/24
	Dir          string       // the node's containerd and kubelet state and logs
	StaticPodDir string       // the kubelet's staticPodPath
	CgroupRoot   string       // the kubelet's cgroupRoot, e.g. /vsrn1a2b3c4d-master-0

	lab *Lab

	mu         sync.Mutex
	containerd *proc
	kubelet    *proc
	kubeProxy  *proc
	killed     bool
	execs      int
}

// Start builds a lab for t and removes it when t ends. It skips t when not
// root, when the packages it runs are missing or when the Kubernetes
// binaries lack the kubelet (VIPSTACK_KUBE_BIN pointing at an older build).
func Start(t testing.TB, o Options) *Lab {
	t.Helper()
	testnet.RequireRoot(t)
	if len(o.Nodes) < 1 || len(o.Nodes) > 20 {
		t.Fatalf("nodelab: %d nodes, want 1..20", len(o.Nodes))
	}
	Require(t)
	bin := kubetest.BinDir(t)
	need := []string{"kubelet"}
	if o.ControlPlane {
		need = append(need, "kube-controller-manager", "kube-scheduler")
	}
	if o.KubeProxy {
		if !o.ControlPlane {
			t.Fatal("nodelab: Options.KubeProxy needs ControlPlane")
		}
		need = append(need, "kube-proxy")
		if _, err := exec.LookPath("nft"); err != nil {
			t.Skip("nodelab: skipping: kube-proxy's nftables mode needs the nft command (Debian package nftables)")
		}
	}
	for _, b := range need {
		if fi, err := os.Stat(filepath.Join(bin, b)); err != nil || fi.Mode()&0o111 == 0 {
			t.Skipf("nodelab: %s has no %s: rebuild with hack/kube-binaries.sh (the cache key follows tools/kube/go.sum)", bin, b)
		}
	}
	began := time.Now()
	dir, err := os.MkdirTemp("", "vsrn-")
	if err != nil {
		t.Fatalf("nodelab: %v", err)
	}
	prefix := o.Prefix
	if prefix == "" {
		prefix = "vsrn"
	}
	topo := testnet.New(t, testnet.Options{Hosts: len(o.Nodes), Client: o.Client, Prefix: prefix})
	l := &Lab{Dir: dir, Tag: topo.Tag, Topology: topo, Client: topo.Client, t: t}
	if o.ControlPlane {
		// Started before the lab's cleanup is registered, so that it stops
		// after the kubelets.
		l.Kube = kubetest.StartWith(t, kubetest.Options{ServingIPs: []netip.Addr{APIAddr.Addr(), KubernetesServiceIP}})
	}
	t.Cleanup(func() {
		if t.Failed() {
			l.logTails()
		}
		if err := l.Close(); err != nil {
			t.Errorf("nodelab: %v", err)
		}
	})
	if err := l.start(bin, o); err != nil {
		t.Fatalf("nodelab: %v", err)
	}
	t.Logf("nodelab: %d nodes ready in %v (namespaces %s*, directory %s)", len(l.Nodes), time.Since(began).Round(100*time.Millisecond), l.Tag, l.Dir)
	return l
}

// Require skips t unless the container runtime, the CNI plugins and
// util-linux's nsenter and unshare are installed.
func Require(t testing.TB) {
	t.Helper()
	var missing []string
	for _, c := range []string{"containerd", "ctr", "runc", "nsenter", "unshare"} {
		if _, err := exec.LookPath(c); err != nil {
			missing = append(missing, c)
		}
	}
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(cniBinDir, p)); err != nil {
			missing = append(missing, filepath.Join(cniBinDir, p))
		}
	}
	if len(missing) > 0 {
		t.Skipf("nodelab: skipping: %s not installed (Debian packages containerd runc containernetworking-plugins util-linux; .ci/run installs them)", strings.Join(missing, ", "))
	}
}

func (l *Lab) start(bin string, o Options) error {
	l.bin, l.kubeProxy = bin, o.KubeProxy
	pauseArchive, err := BuildPauseImage(l.Dir)
	if err != nil {
		return err
	}
	images := append([]string{pauseArchive}, o.Images...)

	sw := l.Topology.Switch
	if err := ip("-n", sw, "addr", "add", APIAddr.Addr().String()+"/24", "dev", "br0"); err != nil {
		return err
	}
	for i, spec := range o.Nodes {
		h := l.Topology.Hosts[i]
		n := &Node{
			Name: spec.Name, Index: h.Index, Host: h, IP: h.IPv4.Addr(), lab: l,
			PodSubnet:  podSubnet(h.Index),
			Dir:        filepath.Join(l.Dir, spec.Name),
			CgroupRoot: "/" + l.Tag + "-" + spec.Name,
		}
		n.StaticPodDir = filepath.Join(n.Dir, "manifests")
		l.Nodes = append(l.Nodes, n)
	}
	if err := l.routePods(); err != nil {
		return err
	}
	if l.Kube != nil {
		if err := l.startControlPlane(bin); err != nil {
			return err
		}
	}
	if o.KubeProxy {
		if err := l.publishAPIEndpoint(); err != nil {
			return err
		}
		// A node connecting to a ClusterIP needs a route to it before
		// kube-proxy's output chain rewrites the destination (the nodes
		// have no default route).
		for _, n := range l.Nodes {
			if err := ip("-n", n.Host.Name, "route", "replace", kubetest.ServiceCIDR, "via", APIAddr.Addr().String()); err != nil {
				return err
			}
		}
	}
	if l.sysctls, err = readSysctls(); err != nil {
		return err
	}
	for _, n := range l.Nodes {
		if err := n.start(bin, images, o.KubeProxy); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	for i, n := range l.Nodes {
		if err := n.waitReady(ctx); err != nil {
			return err
		}
		if err := n.label(ctx, o.Nodes[i].Labels); err != nil {
			return err
		}
	}
	return nil
}

// label sets labels on the registered node, as an admin would (the
// kubelet refuses to set node-role.kubernetes.io/ labels on itself).
func (n *Node) label(ctx context.Context, labels map[string]string) error {
	if len(labels) == 0 || n.lab.Clientset == nil {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return err
	}
	if _, err := n.lab.Clientset.CoreV1().Nodes().Patch(ctx, n.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("label node %s: %w", n.Name, err)
	}
	return nil
}

// podSubnet is node index i's pod subnet.
func podSubnet(i int) netip.Prefix {
	b := netip.MustParseAddr(podSubnetBase).As4()
	b[2] = byte(i)
	return netip.PrefixFrom(netip.AddrFrom4(b), 24)
}

// routePods routes every node's pod subnet to it, from the bridge's
// namespace (the API forwarder's), every other node and the client.
func (l *Lab) routePods() error {
	others := []string{l.Topology.Switch}
	for _, h := range l.Topology.All() {
		others = append(others, h.Name)
	}
	for _, n := range l.Nodes {
		if out, err := exec.Command("ip", "netns", "exec", n.Host.Name, "sysctl", "-qw", "net.ipv4.ip_forward=1").CombinedOutput(); err != nil {
			return fmt.Errorf("enable forwarding on %s: %v: %s", n.Name, err, out)
		}
		for _, ns := range others {
			if ns == n.Host.Name {
				continue
			}
			if err := ip("-n", ns, "route", "replace", n.PodSubnet.String(), "via", n.IP.String()); err != nil {
				return err
			}
		}
	}
	return nil
}

func (l *Lab) startControlPlane(bin string) error {
	var err error
	if l.Clientset, err = kubernetes.NewForConfig(l.Kube.Config); err != nil {
		return fmt.Errorf("client: %w", err)
	}
	// The nodes' kubeconfig: the admin's token, the server at APIAddr.
	kcfg := clientcmdapi.NewConfig()
	kcfg.Clusters["nodelab"] = &clientcmdapi.Cluster{Server: "https://" + APIAddr.String(), CertificateAuthority: l.Kube.CAFile}
	kcfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: l.Kube.Config.BearerToken}
	kcfg.Contexts["nodelab"] = &clientcmdapi.Context{Cluster: "nodelab", AuthInfo: "admin"}
	kcfg.CurrentContext = "nodelab"
	l.NodeKubeconfig = filepath.Join(l.Dir, "node.kubeconfig")
	if err := clientcmd.WriteToFile(*kcfg, l.NodeKubeconfig); err != nil {
		return fmt.Errorf("write %s: %w", l.NodeKubeconfig, err)
	}
	target := strings.TrimPrefix(l.Kube.Config.Host, "https://")
	if l.fwd, err = forward(l.Topology.Switch, APIAddr, target); err != nil {
		return err
	}
	kcm, err := startProc("kube-controller-manager", filepath.Join(l.Dir, "kube-controller-manager.log"),
		filepath.Join(bin, "kube-controller-manager"),
		"--kubeconfig="+l.Kube.Kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		"--controllers=*",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file="+l.Kube.ServiceAccountKeyFile,
		"--root-ca-file="+l.Kube.CAFile,
		// A node whose kubelet is killed is NotReady after 20 s, not 50.
		"--node-monitor-grace-period=20s",
		"--v=1",
	)
	if err != nil {
		return err
	}
	l.procs = append(l.procs, kcm)
	sched, err := startProc("kube-scheduler", filepath.Join(l.Dir, "kube-scheduler.log"),
		filepath.Join(bin, "kube-scheduler"),
		"--kubeconfig="+l.Kube.Kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		"--v=1",
	)
	if err != nil {
		return err
	}
	l.procs = append(l.procs, sched)
	return nil
}

// cgroupHierarchies lists the mounted cgroup hierarchies' directories: the
// v1 ones and, on a hybrid machine, the v2 one (runc makes the containers'
// cgroups there too).
func cgroupHierarchies() ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, line := range strings.Split(string(b), "\n") {
		_, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f := strings.Fields(line)
		if pf := strings.Fields(post); len(pf) > 0 && (pf[0] == "cgroup" || pf[0] == "cgroup2") && len(f) > 4 {
			dirs = append(dirs, f[4])
		}
	}
	return dirs, nil
}

// makeCgroupRoot creates the node's cgroupRoot in every hierarchy, with
// the cpuset of its parent (a new cpuset cgroup has none).
func (n *Node) makeCgroupRoot() error {
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hs {
		d := filepath.Join(h, n.CgroupRoot)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("cgroup %s: %w", d, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				if err := os.WriteFile(filepath.Join(d, f), v, 0o644); err != nil {
					return fmt.Errorf("cgroup %s: %w", filepath.Join(d, f), err)
				}
			}
		}
	}
	return nil
}

// removeCgroups removes the node's cgroupRoot and everything under it,
// deepest first, retrying while the last processes leave (bounded).
func (n *Node) removeCgroups() error {
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range hs {
		root := filepath.Join(h, n.CgroupRoot)
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		slices.Reverse(dirs) // children after their parent in a walk: reversed, deepest first
		for _, d := range dirs {
			var err error
			for range 100 {
				if err = syscall.Rmdir(d); err == nil || errors.Is(err, syscall.ENOENT) {
					err = nil
					break
				}
				time.Sleep(50 * time.Millisecond) // the kernel frees a cgroup once its last task is gone
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

func (n *Node) start(bin string, images []string, kubeProxy bool) error {
	for _, d := range []string{n.Dir, n.StaticPodDir, filepath.Join(n.Dir, "cni"), filepath.Join(n.Dir, "kubelet")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := n.makeCgroupRoot(); err != nil {
		return err
	}
	files := map[string]string{
		"containerd.toml":      containerdConfig(n.Dir, PauseRef),
		"cni/10-vsrn.conflist": cniConfig(n.Dir, n.PodSubnet),
		"kubelet-config.yaml":  kubeletConfig(n, n.lab.Kube == nil),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(n.Dir, name), []byte(data), 0o644); err != nil {
			return err
		}
	}
	// In the node's network namespace and a mount namespace of its own (a
	// slave of the machine's, so the cgroup hierarchies stay; `ip netns
	// exec` would remount /sys and lose them), where the runtime's mounts
	// stay and die with its last process.
	cd, err := startProc("containerd on "+n.Name, filepath.Join(n.Dir, "containerd.log"),
		"nsenter", "--net=/run/netns/"+n.Host.Name, "--",
		"unshare", "--mount", "--propagation", "slave", "--",
		"containerd", "--config", filepath.Join(n.Dir, "containerd.toml"))
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.containerd = cd
	n.mu.Unlock()
	// containerd is ready once ctr reaches it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := n.Ctr("version"); err == nil {
			break
		} else if cd.exited() || time.Now().After(deadline) {
			return fmt.Errorf("containerd on %s did not start: %v\n%s", n.Name, err, cd.tail(20))
		}
		time.Sleep(50 * time.Millisecond) // waiting for another process
	}
	for _, img := range images {
		if err := n.ImportImage(img); err != nil {
			return err
		}
	}
	// The kubelet shares containerd's mount namespace, so the volumes it
	// mounts are the ones the runtime bind-mounts into containers.
	args := []string{"nsenter", "--net=/run/netns/" + n.Host.Name, "--mount=/proc/" + strconv.Itoa(cd.cmd.Process.Pid) + "/ns/mnt", "--",
		filepath.Join(bin, "kubelet"),
		"--config=" + filepath.Join(n.Dir, "kubelet-config.yaml"),
		"--root-dir=" + filepath.Join(n.Dir, "kubelet"),
		"--cert-dir=" + filepath.Join(n.Dir, "kubelet", "pki"),
		"--hostname-override=" + n.Name,
		"--node-ip=" + n.IP.String(),
		"--v=1",
	}
	if n.lab.Kube != nil {
		args = append(args, "--kubeconfig="+n.lab.NodeKubeconfig)
	}
	kl, err := startProc("kubelet on "+n.Name, filepath.Join(n.Dir, "kubelet.log"), args...)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.kubelet = kl
	n.mu.Unlock()
	if !kubeProxy {
		return nil
	}
	kp, err := startProc("kube-proxy on "+n.Name, filepath.Join(n.Dir, "kube-proxy.log"),
		"nsenter", "--net=/run/netns/"+n.Host.Name, "--",
		filepath.Join(bin, "kube-proxy"),
		"--kubeconfig="+n.lab.NodeKubeconfig,
		"--proxy-mode=nftables",
		"--hostname-override="+n.Name,
		"--cluster-cidr="+podCIDR,
		// Leave the machine's (global) conntrack table size alone, and
		// the oom_score_adj root may not lower here.
		"--conntrack-max-per-core=0",
		"--conntrack-tcp-timeout-established=0",
		"--conntrack-tcp-timeout-close-wait=0",
		"--oom-score-adj=0",
		"--healthz-bind-address=127.0.0.1:10256",
		"--metrics-bind-address=127.0.0.1:10249",
		"--nodeport-addresses=primary",
		"--v=1",
	)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.kubeProxy = kp
	n.mu.Unlock()
	return nil
}

// publishAPIEndpoint points the kubernetes Service at the forwarder: the
// API server keeps no endpoints of its own (kubetest runs it with
// --endpoint-reconciler-type=none, advertising loopback).
func (l *Lab) publishAPIEndpoint() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default", Labels: map[string]string{
			discoveryv1.LabelServiceName: "kubernetes",
			discoveryv1.LabelManagedBy:   "nodelab",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{APIAddr.Addr().String()}, Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptrTo("https"), Port: ptrTo(int32(APIAddr.Port())), Protocol: ptrTo(corev1.ProtocolTCP)}},
	}
	if _, err := l.Clientset.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("endpoints of the kubernetes Service: %w", err)
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }

// waitReady waits for the kubelet's /healthz and, when registered, for
// the Node to be Ready.
func (n *Node) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DialContext: n.DialContext, DisableKeepAlives: true}}
	var last error
	for {
		last = n.ready(ctx, client)
		if last == nil {
			return nil
		}
		n.mu.Lock()
		kl := n.kubelet
		n.mu.Unlock()
		if kl.exited() {
			return fmt.Errorf("kubelet on %s exited: last lines of %s:\n%s", n.Name, kl.logPath, kl.tail(30))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %v: %v; last lines of %s:\n%s", n.Name, readyTimeout, last, kl.logPath, kl.tail(30))
		case <-time.After(250 * time.Millisecond): // polling another process
		}
	}
}

func (n *Node) ready(ctx context.Context, client *http.Client) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:10248/healthz", nil)
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("kubelet /healthz: %w", err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("kubelet /healthz: %s: %s", resp.Status, body)
	}
	n.mu.Lock()
	kp := n.kubeProxy
	n.mu.Unlock()
	if kp != nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:10256/healthz", nil)
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("kube-proxy /healthz: %w", err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("kube-proxy /healthz: %s: %s", resp.Status, body)
		}
	}
	if n.lab.Clientset == nil {
		return nil
	}
	node, err := n.lab.Clientset.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node: %w", err)
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				return nil
			}
			return fmt.Errorf("node %s: Ready %s: %s", n.Name, c.Status, c.Message)
		}
	}
	return fmt.Errorf("node %s: no Ready condition yet", n.Name)
}

// DialContext opens a connection from inside the node's namespace.
func (n *Node) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var conn net.Conn
	err := n.Host.Do(func() error {
		var err error
		conn, err = (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, addr)
		return err
	})
	return conn, err
}

// Ctr runs ctr against the node's containerd, in the k8s.io namespace the
// CRI plugin uses, and returns its output.
func (n *Node) Ctr(args ...string) (string, error) {
	argv := append([]string{"--address", filepath.Join(n.Dir, "containerd.sock"), "-n", "k8s.io"}, args...)
	out, err := exec.Command("ctr", argv...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ctr %s on %s: %w: %s", strings.Join(args, " "), n.Name, err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// ImportImage imports an OCI archive into the node's containerd, where the
// kubelet finds it (imagePullPolicy IfNotPresent or Never).
func (n *Node) ImportImage(archive string) error {
	_, err := n.Ctr("images", "import", archive)
	return err
}

// ImportImage imports an OCI archive into every node that still runs.
func (l *Lab) ImportImage(archive string) error {
	var errs []error
	for _, n := range l.Nodes {
		if !n.Killed() {
			errs = append(errs, n.ImportImage(archive))
		}
	}
	return errors.Join(errs...)
}

// Node returns the node called name, or nil.
func (l *Lab) Node(name string) *Node {
	for _, n := range l.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// KillNode kills a node's kubelet and container runtime and everything
// they run (shims and containers), all at once by PID with SIGKILL, as a
// node failure would: addresses its pods configured stay on its link.
func (l *Lab) KillNode(name string) error {
	n := l.Node(name)
	if n == nil {
		return fmt.Errorf("nodelab: no node %q", name)
	}
	return n.Kill()
}

// Kill is KillNode for n.
func (n *Node) Kill() error {
	n.mu.Lock()
	n.killed = true
	n.mu.Unlock()
	if err := killNodePids("/run/netns/"+n.Host.Name, n.CgroupRoot); err != nil {
		return fmt.Errorf("nodelab: kill %s: %w", n.Name, err)
	}
	n.mu.Lock()
	kl, cd, kp := n.kubelet, n.containerd, n.kubeProxy
	n.mu.Unlock()
	return errors.Join(kl.kill(), cd.kill(), kp.kill())
}

// Restart starts a killed node's containerd and kubelet (and kube-proxy)
// again, as after a reboot, and waits until the node is ready. Its images
// stay; its containers are gone, and the kubelet starts its pods again.
func (n *Node) Restart(ctx context.Context) error {
	if !n.Killed() {
		return fmt.Errorf("nodelab: restart %s: it runs; KillNode it first", n.Name)
	}
	if err := n.start(n.lab.bin, nil, n.lab.kubeProxy); err != nil {
		return fmt.Errorf("nodelab: restart %s: %w", n.Name, err)
	}
	n.mu.Lock()
	n.killed = false
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	return n.waitReady(ctx)
}

// Killed reports whether KillNode was called on the node (and Restart not
// since).
func (n *Node) Killed() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.killed
}

// KubeletLog and ContainerdLog return the last lines of the node's logs.
func (n *Node) KubeletLog(lines int) string {
	return tailFile(filepath.Join(n.Dir, "kubelet.log"), lines)
}
func (n *Node) ContainerdLog(lines int) string {
	return tailFile(filepath.Join(n.Dir, "containerd.log"), lines)
}

// ContainerLog returns the log of the running or last container called
// container in a pod whose name starts with pod (a static pod's name is
// its manifest's plus "-" and the node name), from the kubelet's
// podLogsDir.
func (n *Node) ContainerLog(pod, container string) (string, error) {
	dirs, _ := filepath.Glob(filepath.Join(n.Dir, "pods-logs", "*_"+pod+"*_*", container))
	if len(dirs) == 0 {
		return "", fmt.Errorf("%s: no log of container %s in pod %s* yet", n.Name, container, pod)
	}
	files, _ := filepath.Glob(filepath.Join(dirs[len(dirs)-1], "*.log"))
	if len(files) == 0 {
		return "", fmt.Errorf("%s: no log file in %s", n.Name, dirs[len(dirs)-1])
	}
	slices.Sort(files)
	b, err := os.ReadFile(files[len(files)-1])
	return string(b), err
}

// Container is one running container of a node, as containerd reports it.
type Container struct {
	ID   string // containerd's (and the CRI's) container ID
	Pod  string // the pod's name (a static pod's is its manifest's plus "-" and the node name)
	Name string // the container's name in the pod
	PID  int    // its first process, in the machine's PID namespace
}

// Containers lists the node's running containers (not sandboxes).
func (n *Node) Containers() ([]Container, error) {
	out, err := n.Ctr("tasks", "ls")
	if err != nil {
		return nil, err
	}
	var got []Container
	for _, line := range strings.Split(out, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != "RUNNING" {
			continue
		}
		pid, _ := strconv.Atoi(f[1])
		info, err := n.Ctr("containers", "info", f[0])
		if err != nil {
			continue // gone meanwhile
		}
		c := Container{ID: f[0], PID: pid, Pod: label(info, "io.kubernetes.pod.name"), Name: label(info, "io.kubernetes.container.name")}
		if c.Name == "" || label(info, "io.cri-containerd.kind") == "sandbox" {
			continue
		}
		got = append(got, c)
	}
	slices.SortFunc(got, func(a, b Container) int { return strings.Compare(a.Pod+"/"+a.Name, b.Pod+"/"+b.Name) })
	return got, nil
}

// label finds a label's value in `ctr containers info`'s JSON without
// decoding the whole spec.
func label(info, key string) string {
	_, rest, ok := strings.Cut(info, `"`+key+`": "`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// WaitContainer waits until a container called name runs in a pod whose
// name starts with pod, and returns it.
func (n *Node) WaitContainer(ctx context.Context, pod, name string, timeout time.Duration) (Container, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		cs, err := n.Containers()
		for _, c := range cs {
			if c.Name == name && strings.HasPrefix(c.Pod, pod) {
				return c, nil
			}
		}
		select {
		case <-ctx.Done():
			return Container{}, fmt.Errorf("%s: no running container %s in pod %s* after %v (running: %v, %v); kubelet's last lines:\n%s",
				n.Name, name, pod, timeout, cs, err, n.KubeletLog(15))
		case <-time.After(250 * time.Millisecond): // polling another process
		}
	}
}

// Exec runs argv in container c (as `kubectl exec` would; the API server
// cannot reach the kubelets) and returns its combined output.
func (n *Node) Exec(c Container, argv ...string) (string, error) {
	n.mu.Lock()
	n.execs++
	id := fmt.Sprintf("vsrn-exec-%d", n.execs)
	n.mu.Unlock()
	return n.Ctr(append([]string{"tasks", "exec", "--exec-id", id, c.ID}, argv...)...)
}

func (l *Lab) logTails() {
	for _, p := range l.procs {
		l.t.Logf("nodelab: last lines of %s:\n%s", p.logPath, p.tail(20))
	}
	for _, n := range l.Nodes {
		l.t.Logf("nodelab: %s: last lines of the kubelet's log:\n%s", n.Name, n.KubeletLog(25))
		l.t.Logf("nodelab: %s: last lines of containerd's log:\n%s", n.Name, n.ContainerdLog(10))
		if p := filepath.Join(n.Dir, "kube-proxy.log"); fileExists(p) {
			l.t.Logf("nodelab: %s: last lines of kube-proxy's log:\n%s", n.Name, tailFile(p, 15))
		}
	}
}

// Close kills every process of the lab by PID, removes the nodes' cgroups,
// any mount left under the lab's directory, the kubelets' log links and the
// directory, and restores the kernel settings the kubelets changed. The
// namespaces go with the topology (testnet.New's cleanup). It is safe to
// call twice.
func (l *Lab) Close() error {
	l.closeMu.Lock()
	defer l.closeMu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	var errs []error
	var wg sync.WaitGroup
	nodeErrs := make([]error, len(l.Nodes))
	for i, n := range l.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nodeErrs[i] = errors.Join(n.Kill(), n.removeCgroups())
		}()
	}
	wg.Wait()
	errs = append(errs, nodeErrs...)
	for _, f := range l.after {
		f()
	}
	for _, p := range l.procs {
		errs = append(errs, p.stop(5*time.Second))
	}
	if l.fwd != nil {
		l.fwd.close()
	}
	errs = append(errs, unmountUnder(l.Dir), removeLogLinks(l.Dir))
	if l.sysctls != nil {
		errs = append(errs, writeSysctls(l.sysctls))
	}
	if !l.t.Failed() || os.Getenv("VIPSTACK_NODELAB_KEEP") == "" {
		errs = append(errs, os.RemoveAll(l.Dir))
	} else {
		l.t.Logf("nodelab: VIPSTACK_NODELAB_KEEP is set: leaving %s", l.Dir)
	}
	return errors.Join(errs...)
}

// unmountUnder detaches every mount point under dir in this mount
// namespace, deepest first. The runtimes' own mounts live in the mount
// namespace `ip netns exec` made for them and die with their last process;
// this catches anything that propagated here.
func unmountUnder(dir string) error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			points = append(points, f[4])
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// removeLogLinks removes the links the kubelets made in
// /var/log/containers (a fixed path) to logs under dir.
func removeLogLinks(dir string) error {
	const links = "/var/log/containers"
	ents, err := os.ReadDir(links)
	if err != nil {
		return nil // none made
	}
	var errs []error
	for _, e := range ents {
		p := filepath.Join(links, e.Name())
		if target, err := os.Readlink(p); err == nil && strings.HasPrefix(target, dir+"/") {
			if err := os.Remove(p); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// The kernel settings a kubelet sets at start (protectKernelDefaults off);
// the lab puts the machine's values back.
var kubeletSysctls = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
}

func readSysctls() (map[string]string, error) {
	m := map[string]string{}
	for _, k := range kubeletSysctls {
		b, err := os.ReadFile("/proc/sys/" + k)
		if err != nil {
			return nil, fmt.Errorf("read kernel setting: %w", err)
		}
		m[k] = strings.TrimSpace(string(b))
	}
	return m, nil
}

func writeSysctls(m map[string]string) error {
	var errs []error
	for k, v := range m {
		if err := os.WriteFile("/proc/sys/"+k, []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restore kernel setting: %w", err))
		}
	}
	return errors.Join(errs...)
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

package node

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/discovery"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// DefaultKubeconfig is the kubelet's kubeconfig on an OpenShift node, which
// OpenShift's runtimecfg (its keepalived and CoreDNS monitors) reads the
// Node list through.
const DefaultKubeconfig = "/var/lib/kubelet/kubeconfig"

// Source names, as the DNS registry and the logs show them.
const (
	SourceKubernetes = "kubernetes"
	SourceMDNS       = "mdns"
	sourceSelf       = "self"
)

// LiveOptions configure live membership (the cluster file's membership).
type LiveOptions struct {
	// Kubeconfig reaches the API server for the Node list
	// (membership.kubernetes); "" is DefaultKubeconfig.
	Kubeconfig string
	// Role and Addrs describe this node when the cluster file does not
	// list it. An empty Role is taken from its Node object
	// (membership.kubernetes); empty Addrs are its addresses inside the
	// machine networks.
	Role  cluster.Role
	Addrs []netip.Addr
	// Sources, when set, replace the sources the file asks for (tests).
	Sources map[string]discovery.Source
}

// membership is the agent's live node state: what each live source last
// reported, and the seams through which a change is applied.
type membership struct {
	// applyMu serialises applying a membership change and a reload of
	// the cluster file.
	applyMu sync.Mutex

	mu    sync.Mutex
	self  *cluster.Node // this node when the file does not list it
	live  map[string][]discovery.Node
	notes []string // why live nodes were left out, last time

	// reloadVRRP and applyLB (set under the agent's mu) apply a new cluster: the VRRP engine's
	// reload (which keeps the state of instances whose peers alone
	// changed) and the load balancer's (which keeps connections). nil
	// when the node runs none.
	reloadVRRP func() error
	applyLB    func(*lbconfig.Config) error
}

// selfNode returns this node when the file does not list it and a live
// source may: its role from LiveOptions or its Node object, its addresses
// from LiveOptions, its Node object or its interfaces. nil when the file
// lists it or names no live source (PlanFor then says it is missing).
func selfNode(c *cluster.Cluster, name string, o LiveOptions) (*cluster.Node, error) {
	if _, ok := c.NodeByName(name); ok || !c.Membership.Live() {
		return nil, nil
	}
	self := &cluster.Node{Name: name, Role: o.Role, IPs: slices.Clone(o.Addrs)}
	if self.Role == "" && c.Membership.Kubernetes && o.Sources == nil {
		n, err := kubeSelf(o.Kubeconfig, name)
		if err != nil {
			return nil, fmt.Errorf("node %s is not in the cluster file's nodes and its role is unknown: %w; give --role (bootstrap, master or worker)", name, err)
		}
		self.Role = cluster.Role(n.Role)
		if len(self.IPs) == 0 {
			self.IPs = n.Addrs
		}
	}
	switch self.Role {
	case cluster.Bootstrap, cluster.Master, cluster.Worker:
	case "":
		return nil, fmt.Errorf("node %s is not in the cluster file's nodes and its role is unknown; give --role (bootstrap, master or worker)", name)
	default:
		return nil, fmt.Errorf("--role %q is not a role (accepted: bootstrap, master, worker)", self.Role)
	}
	if len(self.IPs) == 0 {
		self.IPs = machineAddrs(c)
	}
	if len(self.IPs) == 0 {
		return nil, fmt.Errorf("node %s is not in the cluster file's nodes and has no address in the machine networks (%s)", name, prefixes(c.MachineNetworks))
	}
	return self, nil
}

// kubeSelf reads this node's Node object once.
func kubeSelf(kubeconfig, name string) (discovery.Node, error) {
	cs, err := kubeClient(kubeconfig)
	if err != nil {
		return discovery.Node{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return discovery.KubeNode(ctx, cs, name)
}

func kubeClient(path string) (kubernetes.Interface, error) {
	if path == "" {
		path = DefaultKubeconfig
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	cfg.UserAgent = "vipstack-node"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return cs, nil
}

// machineAddrs returns this host's addresses inside c's machine networks
// that are not VIPs.
func machineAddrs(c *cluster.Cluster) []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	vips := slices.Concat(c.APIVIPs, c.IngressVIPs, []netip.Addr{c.DNSVIP})
	var out []netip.Addr
	for _, ad := range addrs {
		ipn, ok := ad.(*net.IPNet)
		if !ok {
			continue
		}
		a, ok := netip.AddrFromSlice(ipn.IP)
		if !ok {
			continue
		}
		a = a.Unmap()
		if slices.Contains(vips, a) || slices.Contains(out, a) {
			continue
		}
		for _, p := range c.MachineNetworks {
			if p.Contains(a) {
				out = append(out, a)
				break
			}
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

func prefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

// liveNodes is this node (when the file does not list it) and what the
// live sources report, as cluster nodes: the sources merged
// (discovery.Merge, the Kubernetes Node list's role first).
func (m *membership) liveNodes() []cluster.Node {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []cluster.Node
	if m.self != nil {
		out = append(out, *m.self)
	}
	srcs := make([]string, 0, len(m.live))
	for s := range m.live {
		srcs = append(srcs, s)
	}
	slices.Sort(srcs)
	lists := make([][]discovery.Node, len(srcs))
	for i, s := range srcs {
		lists[i] = m.live[s]
	}
	for _, n := range discovery.Merge(lists...) {
		role := cluster.Role(n.Role)
		if role == "" {
			role = cluster.Worker
		}
		out = append(out, cluster.Node{Name: strings.ToLower(n.Name), Role: role, IPs: n.Addrs})
	}
	return out
}

// effective is file with the live nodes added (cluster.WithNodes).
func (a *Agent) effective(file *cluster.Cluster) *cluster.Cluster {
	c, notes := file.WithNodes(a.memb.liveNodes())
	a.memb.mu.Lock()
	changed := !slices.Equal(notes, a.memb.notes)
	a.memb.notes = notes
	a.memb.mu.Unlock()
	if changed {
		for _, n := range notes {
			a.log.Warn("live membership: node left out of VRRP and the load balancer", "why", n)
		}
	}
	return c
}

// report stores what source reported: the DNS answers it with its next
// query, and the VRRP peers and load balancer backends follow (apply).
func (a *Agent) report(source string, nodes []discovery.Node) {
	a.memb.mu.Lock()
	if a.memb.live == nil {
		a.memb.live = map[string][]discovery.Node{}
	}
	a.memb.live[source] = nodes
	a.memb.mu.Unlock()
	a.nodes.Set(source, nodes)
}

// liveSources returns the sources the cluster file asks for.
func (a *Agent) liveSources() (map[string]discovery.Source, error) {
	if a.opts.Live.Sources != nil {
		return a.opts.Live.Sources, nil
	}
	a.mu.Lock()
	c, p := a.cluster, a.plan
	a.mu.Unlock()
	out := map[string]discovery.Source{}
	if c.Membership.Kubernetes {
		cs, err := kubeClient(a.opts.Live.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("membership.kubernetes: %w", err)
		}
		out[SourceKubernetes] = discovery.KubeNodes{Client: cs}
	}
	if c.Membership.MDNS {
		m := &discovery.MDNS{
			Cluster:   c.Name,
			Self:      discovery.Node{Name: p.Node.Name, Role: discovery.Role(p.Node.Role), Addrs: p.Node.IPs},
			Interface: a.iface,
			Exclude:   slices.DeleteFunc(slices.Concat(c.APIVIPs, c.IngressVIPs, []netip.Addr{c.DNSVIP}), func(a netip.Addr) bool { return !a.IsValid() }),
			// mdns-publisher's form too: during a migration the nodes
			// that still run OpenShift's daemons are seen, and see these.
			OpenShift: true,
			Logger:    a.log.With("source", SourceMDNS),
		}
		if err := m.Validate(); err != nil {
			return nil, fmt.Errorf("membership.mdns: %w", err)
		}
		out[SourceMDNS] = m
	}
	return out, nil
}

// firstListWait bounds how long the node agent waits for the live
// sources' first lists before it starts VRRP (the Node list's comes once
// the API server answers; mDNS reports this node at once, and its peers as
// they answer its first query, for which mdnsFirstAnswers is given).
const (
	firstListWait    = 5 * time.Second
	mdnsFirstAnswers = time.Second
)

// startMembership runs the live sources until ctx is done, applying every
// change they report (a source that fails is started again 2 s later). It
// returns once every source gave its first list (and mDNS's peers had
// mdnsFirstAnswers to answer), or after firstListWait: VRRP then starts
// with the peers known so far rather than alone (in multicast).
func (a *Agent) startMembership(ctx context.Context) {
	a.mu.Lock()
	self := a.memb.self
	live := a.cluster.Membership.Live() || a.opts.Live.Sources != nil
	if a.lb != nil {
		a.memb.applyLB = a.lb.Apply
	}
	a.mu.Unlock()
	if !live {
		return
	}
	if self != nil {
		a.nodes.Set(sourceSelf, []discovery.Node{{Name: self.Name, Role: discovery.Role(self.Role), Addrs: self.IPs}})
	}
	srcs, err := a.liveSources()
	if err != nil {
		a.log.Error("live membership does not run; the cluster file's nodes serve", "err", err)
		return
	}
	changed := make(chan struct{}, 1)
	first := make(chan string, len(srcs))
	for name, src := range srcs {
		var once sync.Once
		go func() {
			for {
				err := src.Run(ctx, func(nodes []discovery.Node) {
					a.report(name, nodes)
					once.Do(func() { first <- name })
					select {
					case changed <- struct{}{}:
					default:
					}
				})
				if ctx.Err() != nil {
					return
				}
				a.log.Error("live membership source stopped; starting it again in 2s", "source", name, "err", err)
				t := a.clk.NewTimer(2 * time.Second)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C():
				}
			}
		}()
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-changed:
				_ = a.applyMembership()
			}
		}
	}()
	t := a.clk.NewTimer(firstListWait)
	defer t.Stop()
	waiting := len(srcs)
	for waiting > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			a.log.Warn("live membership: starting VRRP before every source gave its first list", "waited", firstListWait)
			return
		case name := <-first:
			waiting--
			a.log.Info("live membership: first list", "source", name)
		}
	}
	if _, ok := srcs[SourceMDNS]; ok {
		w := a.clk.NewTimer(mdnsFirstAnswers)
		defer w.Stop()
		select {
		case <-ctx.Done():
		case <-w.C():
		}
	}
	_ = a.applyMembership()
}

// applyMembership applies the live nodes in place: the load balancer's
// backends first, then the VRRP peers (an engine reload that keeps the
// state of every instance whose peers alone changed, so no VIP moves).
// The DNS answers follow the registry without a reload. A change that
// would give this node another role is refused (a restart applies it).
func (a *Agent) applyMembership() error {
	a.memb.applyMu.Lock()
	defer a.memb.applyMu.Unlock()
	a.mu.Lock()
	old, oldPlan := a.cluster, a.plan
	a.mu.Unlock()
	c := a.effective(old)
	if slices.EqualFunc(c.Nodes, old.Nodes, cluster.Node.Equal) {
		return nil
	}
	p, err := c.PlanFor(a.opts.Node)
	if err == nil && (p.Node.Role != oldPlan.Node.Role || p.RunLB != oldPlan.RunLB) {
		err = fmt.Errorf("node %s changed role (%s to %s); restart the node agent to apply that", a.opts.Node, oldPlan.Node.Role, p.Node.Role)
	}
	a.mu.Lock()
	applyLB, reloadVRRP := a.memb.applyLB, a.memb.reloadVRRP
	a.mu.Unlock()
	if err == nil && p.RunLB && applyLB != nil {
		var cfg *lbconfig.Config
		if cfg, err = c.LBConfig(); err == nil {
			err = applyLB(cfg)
		}
		if err != nil {
			err = fmt.Errorf("load balancer: %w", err)
		}
	}
	if err != nil {
		a.log.Error("live membership change not applied", "err", err)
		return err
	}
	a.mu.Lock()
	a.cluster, a.plan = c, p
	a.mu.Unlock()
	joined, left := diffNodes(old.Nodes, c.Nodes)
	if reloadVRRP != nil {
		if err = reloadVRRP(); err != nil {
			a.log.Error("live membership: VRRP reload failed", "err", err)
		}
	}
	a.log.Info("live membership applied", "nodes", len(c.Nodes), "joined", joined, "left", left)
	return err
}

// diffNodes names the nodes new has that old has not (or with other
// addresses or role), and those old has that new has not.
func diffNodes(old, new []cluster.Node) (joined, left []string) {
	key := func(n cluster.Node) string { return fmt.Sprint(n.Name, n.Role, n.IPs) }
	was := map[string]bool{}
	for _, n := range old {
		was[key(n)] = true
	}
	is := map[string]bool{}
	for _, n := range new {
		is[key(n)] = true
		if !was[key(n)] {
			joined = append(joined, n.Name)
		}
	}
	for _, n := range old {
		if !is[key(n)] && !slices.ContainsFunc(new, func(m cluster.Node) bool { return m.Name == n.Name }) {
			left = append(left, n.Name)
		}
	}
	return joined, left
}

// membershipReload refuses a cluster file that changes the live sources:
// they start with the agent (before VRRP, for its first peers).
func membershipReload(old, c *cluster.Cluster) error {
	if old.Membership != c.Membership {
		return fmt.Errorf("membership: %+v to %+v: the live sources start with the node agent; restart it to apply that", old.Membership, c.Membership)
	}
	return nil
}

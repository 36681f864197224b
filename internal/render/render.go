package render

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/version"
)

// Defaults for Options. The vipstack image defaults to this build's,
// version.Image().
const (
	DefaultKeepalivedImage = "quay.io/openshift/origin-keepalived-ipfailover:latest"
	DefaultHAProxyImage    = "docker.io/library/haproxy:2.6"
	DefaultCoreDNSImage    = "registry.k8s.io/coredns/coredns:v1.12.0"
	DefaultNamespace       = "kube-system"
	DefaultConfigPath      = "/etc/vipstack/cluster.yaml"
	DefaultStatusPort      = cluster.DefaultStatusPort
)

// Relative paths of the rendered files. HostPath says where each goes on
// the node.
const (
	VipstackPodPath     = "vipstack/vipstack-node.yaml"
	KeepalivedPodPath   = "upstream/manifests/keepalived.yaml"
	HAProxyPodPath      = "upstream/manifests/haproxy.yaml"
	CoreDNSPodPath      = "upstream/manifests/coredns.yaml"
	KeepalivedConfPath  = "upstream/keepalived/keepalived.conf"
	HAProxyCfgPath      = "upstream/haproxy/haproxy.cfg"
	CorefilePath        = "upstream/coredns/Corefile"
	staticPodDir        = "/etc/kubernetes/manifests"
	hostKeepalivedDir   = "/etc/keepalived"
	hostHAProxyDir      = "/etc/haproxy"
	hostCoreDNSDir      = "/etc/coredns"
	hostVipstackRunDir  = "/run/vipstack"
	containerConfigPath = "/etc/vipstack/cluster.yaml"
)

// ErrNoInterface is Files' error when the upstream keepalived.conf has no
// interface to name.
var ErrNoInterface = errors.New("no interface for VRRP: set vrrp.interface in the cluster file " +
	"or give an interface name (e.g. eth0, ens3), or render without the upstream daemons")

// Options tune what Files renders. The zero value renders everything with
// the default images, except that the upstream keepalived.conf needs an
// interface (Interface or the cluster file's vrrp.interface).
type Options struct {
	// Image runs `vipstack node` (and the haproxy pod's redirect);
	// default version.Image(), this build's image.
	Image string
	// Images of the upstream daemons' pods.
	KeepalivedImage, HAProxyImage, CoreDNSImage string
	// Namespace of the static pods (their mirror pods need it to exist);
	// default kube-system.
	Namespace string
	// ConfigPath is where cluster.yaml is on the node; the vipstack pod
	// mounts it read-only. Default /etc/vipstack/cluster.yaml.
	ConfigPath string
	// StatusPort is where `vipstack node --status-addr 127.0.0.1:PORT`
	// serves /status, which the pod's liveness probe reads; default 9651.
	StatusPort int
	// Interface carries VRRP in the upstream keepalived.conf, which needs
	// a name written in it; default the cluster file's vrrp.interface.
	// `vipstack node` finds the interface itself and needs none.
	Interface string
	// NoUpstream renders only vipstack's own pod.
	NoUpstream bool
}

var (
	imageRE = regexp.MustCompile(`^[a-z0-9][A-Za-z0-9._/:@+-]*$`)
	labelRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
)

// withDefaults returns a copy of o with defaults filled in and checked.
func (o Options) withDefaults(c *cluster.Cluster) (Options, error) {
	def := func(s *string, d string) {
		if *s == "" {
			*s = d
		}
	}
	def(&o.Image, version.Image())
	def(&o.KeepalivedImage, DefaultKeepalivedImage)
	def(&o.HAProxyImage, DefaultHAProxyImage)
	def(&o.CoreDNSImage, DefaultCoreDNSImage)
	def(&o.Namespace, DefaultNamespace)
	def(&o.ConfigPath, DefaultConfigPath)
	def(&o.Interface, c.VRRP.Interface)
	if o.StatusPort == 0 {
		o.StatusPort = DefaultStatusPort
	}
	var errs []error
	for _, im := range []struct{ field, v string }{
		{"image", o.Image}, {"keepalived image", o.KeepalivedImage},
		{"haproxy image", o.HAProxyImage}, {"coredns image", o.CoreDNSImage},
	} {
		if !imageRE.MatchString(im.v) {
			errs = append(errs, fmt.Errorf("%s %q is not an image reference (e.g. %s)", im.field, im.v, version.Image()))
		}
	}
	if !labelRE.MatchString(o.Namespace) {
		errs = append(errs, fmt.Errorf("namespace %q is not a DNS label (e.g. %s)", o.Namespace, DefaultNamespace))
	}
	if !path.IsAbs(o.ConfigPath) || path.Clean(o.ConfigPath) != o.ConfigPath || strings.ContainsAny(o.ConfigPath, " \t\n\"'") {
		errs = append(errs, fmt.Errorf("config path %q is not a clean absolute path without blanks or quotes (e.g. %s)", o.ConfigPath, DefaultConfigPath))
	}
	if o.StatusPort < 1 || o.StatusPort > 65535 {
		errs = append(errs, fmt.Errorf("status port %d is not a port (1..65535)", o.StatusPort))
	}
	if o.Interface != "" && !validIfName(o.Interface) {
		errs = append(errs, fmt.Errorf("interface %q is not an interface name (at most 15 characters, no '/', ':' or blanks)", o.Interface))
	}
	return o, errors.Join(errs...)
}

func validIfName(s string) bool {
	return s != "" && len(s) <= 15 && s != "." && s != ".." && !strings.ContainsAny(s, "/: \t\n\v\f\r\"'{}#!")
}

// Files renders what node runs, as paths relative to an output directory
// mapped to their contents:
//
//   - vipstack/vipstack-node.yaml: the static pod running `vipstack node`;
//   - unless NoUpstream, the upstream equivalent: upstream/keepalived/
//     keepalived.conf (every role), upstream/haproxy/haproxy.cfg (masters)
//     and upstream/coredns/Corefile (every role), with their static pods in
//     upstream/manifests/.
//
// HostPath says where each file is installed on the node.
func Files(c *cluster.Cluster, node string, opts Options) (map[string][]byte, error) {
	o, err := opts.withDefaults(c)
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	plan, err := c.PlanFor(node)
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	if plan.BGP != nil && !o.NoUpstream {
		var vips []string
		for _, r := range plan.BGP.Config.Routes {
			vips = append(vips, r.VIP.String())
		}
		return nil, fmt.Errorf("render: node %s announces %s by BGP (bgp.announce), which the upstream keepalived.conf cannot express "+
			"(it holds VIPs by VRRP only); render with --no-upstream (vipstack node announces them), or leave them out of bgp.announce",
			node, strings.Join(vips, ", "))
	}
	out := map[string][]byte{}
	add := func(name string, data []byte, err error) error {
		if err != nil {
			return fmt.Errorf("render %s for node %s: %w", name, node, err)
		}
		out[name] = data
		return nil
	}
	data, err := vipstackPod(c, plan, o)
	if err := add(VipstackPodPath, data, err); err != nil {
		return nil, err
	}
	if o.NoUpstream {
		return out, nil
	}
	if c.Membership.Live() {
		return nil, fmt.Errorf("render for node %s: membership: the upstream keepalived.conf, haproxy.cfg and Corefile would list the file's nodes only and never follow a join or a leave; render with --no-upstream, or list every node and leave membership out for nodes that keep the upstream daemons", node)
	}
	if len(plan.Instances) > 0 {
		if o.Interface == "" {
			return nil, fmt.Errorf("render %s for node %s: %w", KeepalivedConfPath, node, ErrNoInterface)
		}
		data, err := KeepalivedConf(c, plan, o.Interface)
		if err := add(KeepalivedConfPath, data, err); err != nil {
			return nil, err
		}
		data, err = keepalivedPod(plan, o)
		if err := add(KeepalivedPodPath, data, err); err != nil {
			return nil, err
		}
	}
	if plan.RunLB {
		if c.BalanceMachineConfig {
			// The haproxy pod's redirect container captures the API
			// port alone; the machine-config one is not rendered.
			return nil, fmt.Errorf("render %s for node %s: loadBalancer.machineConfig is not rendered for the upstream haproxy (its pod redirects the API port only); render with --no-upstream, or leave it off for nodes that keep haproxy", HAProxyCfgPath, node)
		}
		lb, err := c.LBConfig()
		if err != nil {
			return nil, fmt.Errorf("render %s for node %s: %w", HAProxyCfgPath, node, err)
		}
		data, err := HAProxyCfg(lb)
		if err := add(HAProxyCfgPath, data, err); err != nil {
			return nil, err
		}
		data, err = haproxyPod(c, plan, lb, o)
		if err := add(HAProxyPodPath, data, err); err != nil {
			return nil, err
		}
	}
	if plan.RunDNS {
		data, err := Corefile(c)
		if err := add(CorefilePath, data, err); err != nil {
			return nil, err
		}
		data, err = corednsPod(plan, o)
		if err := add(CoreDNSPodPath, data, err); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// HostPath returns where the rendered file rel (a key of Files' result) is
// installed on the node: static pods in /etc/kubernetes/manifests, the
// daemons' configurations in /etc/keepalived, /etc/haproxy and /etc/coredns
// (the directories their pods mount). It returns "" for other paths.
func HostPath(rel string) string {
	dir, file := path.Split(rel)
	switch dir {
	case "vipstack/", "upstream/manifests/":
		return path.Join(staticPodDir, file)
	case "upstream/keepalived/":
		return path.Join(hostKeepalivedDir, file)
	case "upstream/haproxy/":
		return path.Join(hostHAProxyDir, file)
	case "upstream/coredns/":
		return path.Join(hostCoreDNSDir, file)
	}
	return ""
}

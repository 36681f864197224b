package render

import (
	"bytes"
	"fmt"
	"net/netip"
	"path"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// The few Kubernetes Pod fields the static pods use, in the API's field
// order. Marshalled by yaml.v3, which sorts map keys, so output is stable.
type (
	pod struct {
		APIVersion string  `yaml:"apiVersion"`
		Kind       string  `yaml:"kind"`
		Metadata   meta    `yaml:"metadata"`
		Spec       podSpec `yaml:"spec"`
	}
	meta struct {
		Name      string            `yaml:"name"`
		Namespace string            `yaml:"namespace"`
		Labels    map[string]string `yaml:"labels,omitempty"`
	}
	podSpec struct {
		HostNetwork                   bool         `yaml:"hostNetwork"`
		DNSPolicy                     string       `yaml:"dnsPolicy,omitempty"`
		PriorityClassName             string       `yaml:"priorityClassName,omitempty"`
		TerminationGracePeriodSeconds int          `yaml:"terminationGracePeriodSeconds,omitempty"`
		Tolerations                   []toleration `yaml:"tolerations,omitempty"`
		Containers                    []container  `yaml:"containers"`
		Volumes                       []volume     `yaml:"volumes,omitempty"`
	}
	toleration struct {
		Operator string `yaml:"operator"`
	}
	container struct {
		Name                     string           `yaml:"name"`
		Image                    string           `yaml:"image"`
		ImagePullPolicy          string           `yaml:"imagePullPolicy,omitempty"`
		Command                  []string         `yaml:"command,omitempty"`
		Args                     []string         `yaml:"args,omitempty"`
		SecurityContext          *securityContext `yaml:"securityContext,omitempty"`
		Resources                resources        `yaml:"resources"`
		LivenessProbe            *probe           `yaml:"livenessProbe,omitempty"`
		VolumeMounts             []volumeMount    `yaml:"volumeMounts,omitempty"`
		TerminationMessagePolicy string           `yaml:"terminationMessagePolicy,omitempty"`
	}
	securityContext struct {
		Privileged               *bool         `yaml:"privileged,omitempty"`
		AllowPrivilegeEscalation *bool         `yaml:"allowPrivilegeEscalation,omitempty"`
		ReadOnlyRootFilesystem   *bool         `yaml:"readOnlyRootFilesystem,omitempty"`
		Capabilities             *capabilities `yaml:"capabilities,omitempty"`
	}
	capabilities struct {
		Add  []string `yaml:"add,omitempty"`
		Drop []string `yaml:"drop,omitempty"`
	}
	resources struct {
		Requests map[string]string `yaml:"requests,omitempty"`
	}
	probe struct {
		HTTPGet             httpGet `yaml:"httpGet"`
		InitialDelaySeconds int     `yaml:"initialDelaySeconds,omitempty"`
		PeriodSeconds       int     `yaml:"periodSeconds,omitempty"`
		TimeoutSeconds      int     `yaml:"timeoutSeconds,omitempty"`
		FailureThreshold    int     `yaml:"failureThreshold,omitempty"`
	}
	httpGet struct {
		Host string `yaml:"host,omitempty"`
		Path string `yaml:"path"`
		Port int    `yaml:"port"`
	}
	volumeMount struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly,omitempty"`
	}
	volume struct {
		Name     string   `yaml:"name"`
		HostPath hostPath `yaml:"hostPath"`
	}
	hostPath struct {
		Path string `yaml:"path"`
		Type string `yaml:"type,omitempty"`
	}
)

func ptr[T any](v T) *T { return &v }

// newPod fills what every static pod shares, as OpenShift's on-premise
// pods do: host network, critical priority, every taint tolerated.
func newPod(name string, plan *cluster.Plan, o Options, c container, vols []volume) pod {
	c.ImagePullPolicy = "IfNotPresent"
	c.TerminationMessagePolicy = "FallbackToLogsOnError"
	if c.Resources.Requests == nil {
		c.Resources.Requests = map[string]string{"cpu": "100m", "memory": "128Mi"}
	}
	return pod{
		APIVersion: "v1",
		Kind:       "Pod",
		Metadata: meta{
			Name:      name,
			Namespace: o.Namespace,
			Labels: map[string]string{
				"app.kubernetes.io/name":    name,
				"app.kubernetes.io/part-of": "vipstack",
				"vipstack.io/role":          string(plan.Node.Role),
			},
		},
		Spec: podSpec{
			HostNetwork: true,
			// The pod resolves like the node: the cluster DNS may be the
			// very thing this pod starts.
			DNSPolicy:                     "Default",
			PriorityClassName:             "system-node-critical",
			TerminationGracePeriodSeconds: 65,
			Tolerations:                   []toleration{{Operator: "Exists"}},
			Containers:                    []container{c},
			Volumes:                       vols,
		},
	}
}

func marshalPod(plan *cluster.Plan, rel, what string, p pod) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s on node %s (%s), rendered by `vipstack render`.\n", what, plan.Node.Name, plan.Node.Role)
	fmt.Fprintf(&b, "# A static pod: install as %s.\n", HostPath(rel))
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(p); err != nil {
		return nil, fmt.Errorf("encode pod %s: %w", p.Metadata.Name, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode pod %s: %w", p.Metadata.Name, err)
	}
	return b.Bytes(), nil
}

// The kubelet's directory and kubeconfig on an OpenShift node (and
// node.DefaultKubeconfig).
const (
	kubeletDir        = "/var/lib/kubelet"
	kubeletKubeconfig = kubeletDir + "/kubeconfig"
)

// dirVolume mounts a host directory read-only at the same path.
func dirVolume(name, dir string) (volume, volumeMount) {
	return volume{Name: name, HostPath: hostPath{Path: dir, Type: "Directory"}},
		volumeMount{Name: name, MountPath: dir, ReadOnly: true}
}

// vipstackPod runs `vipstack node` with the capabilities it needs and
// nothing more: NET_ADMIN (addresses, nftables), NET_RAW (VRRP, ARP and NDP
// sockets) and NET_BIND_SERVICE (DNS on port 53). It mounts the cluster
// file read-only and /run/vipstack, where the agent keeps the ledger of the
// VIPs it holds so that a restarted container removes what a crashed one
// left behind. Its liveness probe reads the agent's /status on loopback.
func vipstackPod(cl *cluster.Cluster, plan *cluster.Plan, o Options) ([]byte, error) {
	statusAddr := "127.0.0.1:" + strconv.Itoa(o.StatusPort)
	c := container{
		Name:  "vipstack",
		Image: o.Image,
		Command: []string{"vipstack", "node",
			"--config", containerConfigPath,
			"--node", plan.Node.Name,
			"--status-addr", statusAddr,
		},
		SecurityContext: &securityContext{
			Privileged:               ptr(false),
			AllowPrivilegeEscalation: ptr(false),
			ReadOnlyRootFilesystem:   ptr(true),
			Capabilities: &capabilities{
				Add:  []string{"NET_ADMIN", "NET_RAW", "NET_BIND_SERVICE"},
				Drop: []string{"ALL"},
			},
		},
		LivenessProbe: &probe{
			HTTPGet:             httpGet{Host: "127.0.0.1", Path: "/status", Port: o.StatusPort},
			InitialDelaySeconds: 10, PeriodSeconds: 10, TimeoutSeconds: 3, FailureThreshold: 3,
		},
		VolumeMounts: []volumeMount{
			{Name: "cluster-config", MountPath: containerConfigPath, ReadOnly: true},
			{Name: "run", MountPath: hostVipstackRunDir},
		},
	}
	vols := []volume{
		{Name: "cluster-config", HostPath: hostPath{Path: o.ConfigPath, Type: "File"}},
		{Name: "run", HostPath: hostPath{Path: hostVipstackRunDir, Type: "DirectoryOrCreate"}},
	}
	if cl.Membership.Kubernetes {
		// The kubelet's kubeconfig and the client certificate it names,
		// as OpenShift's runtimecfg reads the Node list.
		c.Command = append(c.Command, "--kubeconfig", kubeletKubeconfig)
		vol, mnt := dirVolume("kubelet", kubeletDir)
		c.VolumeMounts, vols = append(c.VolumeMounts, mnt), append(vols, vol)
	}
	return marshalPod(plan, VipstackPodPath, "vipstack node", newPod("vipstack-node", plan, o, c, vols))
}

// keepalivedPod runs keepalived in the foreground on the rendered
// keepalived.conf. It is privileged as in OpenShift: keepalived changes
// addresses, opens raw sockets and runs its check scripts as root.
func keepalivedPod(plan *cluster.Plan, o Options) ([]byte, error) {
	vol, mnt := dirVolume("conf-dir", hostKeepalivedDir)
	c := container{
		Name:  "keepalived",
		Image: o.KeepalivedImage,
		Command: []string{"/usr/sbin/keepalived", "--dont-fork", "--vrrp", "--log-console", "--log-detail",
			"--use-file", path.Join(hostKeepalivedDir, path.Base(KeepalivedConfPath))},
		SecurityContext: &securityContext{Privileged: ptr(true)},
		VolumeMounts:    []volumeMount{mnt},
	}
	return marshalPod(plan, KeepalivedPodPath, "keepalived", newPod("keepalived", plan, o, c, []volume{vol}))
}

// haproxyPod runs haproxy in the foreground on the rendered haproxy.cfg.
// It needs no privilege: its ports are above 1024. Its liveness probe is
// the monitor URI, as in OpenShift.
func haproxyPod(cl *cluster.Cluster, plan *cluster.Plan, lb *lbconfig.Config, o Options) ([]byte, error) {
	vol, mnt := dirVolume("conf-dir", hostHAProxyDir)
	c := container{
		Name:    "haproxy",
		Image:   o.HAProxyImage,
		Command: []string{"haproxy", "-W", "-db", "-f", path.Join(hostHAProxyDir, path.Base(HAProxyCfgPath))},
		SecurityContext: &securityContext{
			AllowPrivilegeEscalation: ptr(false),
			Capabilities:             &capabilities{Drop: []string{"ALL"}},
		},
		VolumeMounts: []volumeMount{mnt},
	}
	if len(lb.Monitors) > 0 && len(lb.Monitors[0].Binds) > 0 {
		c.LivenessProbe = &probe{
			HTTPGet:             httpGet{Path: lb.Monitors[0].URI, Port: int(lb.Monitors[0].Binds[0].Addr.Port())},
			InitialDelaySeconds: 10, PeriodSeconds: 10, TimeoutSeconds: 3, FailureThreshold: 3,
		}
	}
	p := newPod("haproxy", plan, o, c, []volume{vol})
	if m := haproxyMonitor(cl, lb, o); m != nil {
		p.Spec.Containers = append(p.Spec.Containers, *m)
	}
	return marshalPod(plan, HAProxyPodPath, "haproxy", p)
}

// haproxyMonitor is the haproxy pod's second container, as OpenShift's
// haproxy-monitor: `vipstack redirect` sends each API VIP's API port to
// haproxy's frontend while haproxy's monitor URI answers 200, so that the
// node holding the API VIP balances its clients over every master (without
// it they reach this node's own API server only). nil when haproxy has no
// monitor to follow.
func haproxyMonitor(cl *cluster.Cluster, lb *lbconfig.Config, o Options) *container {
	if len(lb.Monitors) == 0 || len(lb.Monitors[0].Binds) == 0 || len(cl.APIVIPs) == 0 {
		return nil
	}
	mon := lb.Monitors[0]
	cmd := []string{"vipstack", "redirect"}
	for _, v := range cl.APIVIPs {
		cmd = append(cmd, "--vip", netip.AddrPortFrom(v, uint16(cl.Ports.API)).String())
	}
	cmd = append(cmd, "--to-port", strconv.Itoa(cl.Ports.LB),
		"--monitor", "http://127.0.0.1:"+strconv.Itoa(int(mon.Binds[0].Addr.Port()))+mon.URI)
	c := container{
		Name:    "haproxy-monitor",
		Image:   o.Image,
		Command: cmd,
		SecurityContext: &securityContext{
			AllowPrivilegeEscalation: ptr(false),
			ReadOnlyRootFilesystem:   ptr(true),
			Capabilities:             &capabilities{Add: []string{"NET_ADMIN"}, Drop: []string{"ALL"}},
		},
		ImagePullPolicy:          "IfNotPresent",
		TerminationMessagePolicy: "FallbackToLogsOnError",
	}
	c.Resources.Requests = map[string]string{"cpu": "10m", "memory": "32Mi"}
	return &c
}

// corednsPod runs CoreDNS on the rendered Corefile, locked down as
// Kubernetes' own CoreDNS deployment: only NET_BIND_SERVICE (port 53), a
// read-only root file system. The directory is mounted rather than the
// file so that the reload plugin sees a replaced Corefile.
func corednsPod(plan *cluster.Plan, o Options) ([]byte, error) {
	vol, mnt := dirVolume("conf-dir", hostCoreDNSDir)
	c := container{
		Name:  "coredns",
		Image: o.CoreDNSImage,
		Args:  []string{"-conf", path.Join(hostCoreDNSDir, path.Base(CorefilePath))},
		SecurityContext: &securityContext{
			AllowPrivilegeEscalation: ptr(false),
			ReadOnlyRootFilesystem:   ptr(true),
			Capabilities:             &capabilities{Add: []string{"NET_BIND_SERVICE"}, Drop: []string{"ALL"}},
		},
		LivenessProbe: &probe{
			HTTPGet:             httpGet{Path: "/health", Port: cluster.DNSHealthPort},
			InitialDelaySeconds: 10, PeriodSeconds: 10, TimeoutSeconds: 3, FailureThreshold: 3,
		},
		VolumeMounts: []volumeMount{mnt},
	}
	return marshalPod(plan, CoreDNSPodPath, "CoreDNS", newPod("coredns", plan, o, c, []volume{vol}))
}

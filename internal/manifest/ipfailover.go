package manifest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/vipstack/vipstack/internal/ipfailover"
)

// Defaults of `oc adm ipfailover` that differ from, or are not, the
// image's own.
const (
	// DefaultIPFailoverName is oc's default NAME.
	DefaultIPFailoverName = "ipfailover"
	// DefaultServiceAccount is oc's --service-account.
	DefaultServiceAccount = "ipfailover"
	// DefaultIptablesChain is oc's --iptables-chain (the image's own
	// default is none).
	DefaultIptablesChain = "INPUT"
	// ServicePortBase is oc's host port for the pool's pods before the
	// VRID offset is added (1985 + offset): two pods of a pool never
	// share a node. Here it is the pool's loopback /status port too.
	ServicePortBase = 1985
	// StatusPortAuto asks for ServicePortBase + the VRID offset.
	StatusPortAuto = -1
	// StateDir is where the pods keep the ledger of held VIPs: a host
	// directory, so a restarted container removes what a killed one held.
	StateDir = "/run/vipstack"
)

// IPFailoverDefaults returns the variables `oc adm ipfailover` writes into
// every Deployment unless told otherwise, keyed by variable, as flags
// default them. The VRID offset is not among them: oc writes 0, which
// vipstack would read as a fixed offset, so vipstack's default (from 11
// up, avoiding VRIDs heard on the link) is kept unless --vrrp-id-offset is
// given.
func IPFailoverDefaults() map[string]string {
	return map[string]string{
		ipfailover.EnvMonitorPort:   "80",
		ipfailover.EnvReplicaCount:  "1",
		ipfailover.EnvIptablesChain: DefaultIptablesChain,
		ipfailover.EnvPreemption:    "preempt_delay 300",
		ipfailover.EnvCheckInterval: "2",
	}
}

// IPFailover is what the Deployment of one pool is made from.
type IPFailover struct {
	// Name names the pool (OPENSHIFT_HA_CONFIG_NAME), the Deployment, its
	// container's label `ipfailover: NAME`; a DNS-1123 label.
	Name string
	// Namespace of the objects; "" leaves it to kubectl's context.
	Namespace string
	// Image runs `vipstack ipfailover` (its entrypoint is /vipstack).
	Image string
	// Vars holds the pool's settings keyed by variable name
	// (ipfailover.EnvVirtualIPs, ...), with the values the flags of
	// ipfailover.Vars give; "" is unset. The name comes from Name.
	Vars map[string]string
	// Selector is the node selector: key=value pairs, comma separated.
	Selector string
	// ServiceAccount runs the pods; its object is printed too, unless it
	// is "" or "default" (every namespace has that one).
	ServiceAccount string
	// StatusPort is the loopback port of the pool's /status, which the
	// kubelet probes and the pod declares as its host port; 0: none of
	// the three; StatusPortAuto: ServicePortBase + the VRID offset.
	StatusPort int
}

// IPFailoverObjects are the objects of one pool.
type IPFailoverObjects struct {
	ServiceAccount *corev1.ServiceAccount // nil when none is printed
	Deployment     *appsv1.Deployment
	// Spec is the pool's configuration as `vipstack ipfailover` reads it
	// from the Deployment's environment.
	Spec *ipfailover.Spec
}

// Objects returns the objects in the order they are applied.
func (o *IPFailoverObjects) Objects() []runtime.Object {
	var out []runtime.Object
	if o.ServiceAccount != nil {
		out = append(out, o.ServiceAccount)
	}
	return append(out, o.Deployment)
}

// NewIPFailover validates in and builds the pool's objects. The pool's
// settings go through ipfailover.Parse, the parser `vipstack ipfailover`
// runs on the Deployment's environment; every rejection names the flag,
// the bad value and what is accepted, and all of them are reported at once.
func NewIPFailover(in IPFailover) (*IPFailoverObjects, error) {
	var errs []error
	bad := func(what, val, want string) {
		errs = append(errs, fmt.Errorf("%s %q: want %s", what, val, want))
	}
	if msgs := validation.IsDNS1123Label(in.Name); len(msgs) > 0 {
		bad("NAME", in.Name, "a DNS-1123 label, the Deployment's name and the pool's (OPENSHIFT_HA_CONFIG_NAME): "+strings.Join(msgs, "; "))
	}
	if in.Namespace != "" {
		if msgs := validation.IsDNS1123Label(in.Namespace); len(msgs) > 0 {
			bad("--namespace", in.Namespace, "a namespace name: "+strings.Join(msgs, "; "))
		}
	}
	if in.Image == "" || strings.ContainsFunc(in.Image, func(r rune) bool { return r <= ' ' }) {
		bad("--image", in.Image, "an image reference without spaces, e.g. ghcr.io/vipstack/vipstack:v0.1.0")
	}
	nodeSelector, err := labels.ConvertSelectorToLabelsMap(in.Selector)
	if err != nil {
		bad("--selector", in.Selector, fmt.Sprintf("node labels as key=value pairs separated by commas, e.g. router=us-west-ha (%v)", err))
	}
	if in.ServiceAccount != "" {
		if msgs := validation.IsDNS1123Subdomain(in.ServiceAccount); len(msgs) > 0 {
			bad("--service-account", in.ServiceAccount, "a ServiceAccount name: "+strings.Join(msgs, "; "))
		}
	}
	if in.StatusPort < StatusPortAuto || in.StatusPort > 65535 {
		bad("--status-port", strconv.Itoa(in.StatusPort), fmt.Sprintf("a TCP port from 1 to 65535, 0 (no status endpoint, probes or host port) or %d (%d + the VRID offset)", StatusPortAuto, ServicePortBase))
	}

	vars := map[string]string{}
	for k, v := range in.Vars {
		if k == ipfailover.EnvConfigName {
			errs = append(errs, fmt.Errorf("%s is the pool's NAME, not a setting (given %q)", k, v))
			continue
		}
		if v != "" {
			vars[k] = v
		}
	}
	vars[ipfailover.EnvConfigName] = in.Name
	spec, err := ipfailover.Parse(ipfailover.Input{Flags: vars, FlagNames: true})
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	// Deployment-level rules, on the validated settings.
	replicas := spec.ReplicaCount
	if n, err := strconv.Atoi(strings.TrimSpace(vars[ipfailover.EnvReplicaCount])); err == nil && n == 0 {
		bad("--replicas", vars[ipfailover.EnvReplicaCount], fmt.Sprintf("a number of pods from 1 to %d, one per node of the pool", ipfailover.MaxReplicas))
	}
	ranks := replicas
	if spec.Unicast() {
		ranks = len(spec.Peers)
		if ranks != replicas {
			errs = append(errs, fmt.Errorf("--unicast-peers lists %d nodes but --replicas is %d: every pod needs its node in the list, and every listed node a pod; want as many replicas as peers", ranks, replicas))
		}
	}
	plan := ipfailover.NewPlan(spec, ranks)
	if _, err := ipfailover.AssignVRIDs(plan, spec, nil, nil); err != nil {
		errs = append(errs, fmt.Errorf("--virtual-ips (%d VIPs), --virtual-ip-groups, --replicas %d, --vrrp-id-offset %d, --excluded-vrrp-ids: %w", len(spec.VIPs), ranks, spec.VRIDOffset, err))
	}
	port := in.StatusPort
	if port == StatusPortAuto {
		port = ServicePortBase + spec.VRIDOffset
	}
	if port != 0 && port == spec.MonitorPort {
		bad("--status-port", strconv.Itoa(port), fmt.Sprintf("a port other than --watch-port %d: the monitored service may listen on it", spec.MonitorPort))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	out := &IPFailoverObjects{Spec: spec}
	sa := in.ServiceAccount
	if sa != "" && sa != "default" {
		out.ServiceAccount = &corev1.ServiceAccount{
			TypeMeta:                     metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta:                   metav1.ObjectMeta{Name: sa, Namespace: in.Namespace, Labels: ipfailoverLabels(in.Name)},
			AutomountServiceAccountToken: ptr(false),
		}
	}
	out.Deployment = deployment(in, sa, nodeSelector, vars, int32(replicas), port)
	return out, nil
}

func ipfailoverLabels(name string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":      "vipstack",
		"app.kubernetes.io/component": "ipfailover",
		"ipfailover":                  name, // oc's label
	}
}

func deployment(in IPFailover, sa string, nodeSelector map[string]string, vars map[string]string, replicas int32, port int) *appsv1.Deployment {
	var env []corev1.EnvVar
	for _, v := range ipfailover.Vars() {
		if val := vars[v.Name]; val != "" {
			env = append(env, corev1.EnvVar{Name: v.Name, Value: val})
		}
	}
	args := []string{"ipfailover"}
	c := corev1.Container{
		Name:            "ipfailover",
		Image:           in.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Env:             env,
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("20m"),
			corev1.ResourceMemory: resource.MustParse("32Mi"),
		}},
		// NET_ADMIN: VIPs over rtnetlink and the nftables rule admitting
		// VRRP; NET_RAW: VRRP, ARP and NA sockets (docs/security.md).
		SecurityContext: &corev1.SecurityContext{
			Privileged:               ptr(false),
			AllowPrivilegeEscalation: ptr(false),
			ReadOnlyRootFilesystem:   ptr(true),
			RunAsUser:                ptr(int64(0)),
			Capabilities: &corev1.Capabilities{
				Drop: []corev1.Capability{"ALL"},
				Add:  []corev1.Capability{"NET_ADMIN", "NET_RAW"},
			},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		VolumeMounts:             []corev1.VolumeMount{{Name: "state", MountPath: StateDir}},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	if port != 0 {
		args = append(args, fmt.Sprintf("--status-addr=127.0.0.1:%d", port))
		// The declared host port keeps a second pod of the pool (or of a
		// pool with the same port) off the node, as oc's does.
		c.Ports = []corev1.ContainerPort{{Name: "status", ContainerPort: int32(port), HostPort: int32(port), Protocol: corev1.ProtocolTCP}}
		probe := func(period, failures int32) *corev1.Probe {
			return &corev1.Probe{
				ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
					Host: "127.0.0.1", Path: "/status", Port: intstr.FromInt32(int32(port)), Scheme: corev1.URISchemeHTTP,
				}},
				InitialDelaySeconds: 5, PeriodSeconds: period, TimeoutSeconds: 3, FailureThreshold: failures,
			}
		}
		c.LivenessProbe, c.ReadinessProbe = probe(10, 3), probe(5, 1)
	}
	args = append(args, "--state-dir="+StateDir)
	c.Args = args

	lbl := ipfailoverLabels(in.Name)
	sel := map[string]string{"ipfailover": in.Name}
	if len(nodeSelector) == 0 {
		nodeSelector = nil
	}
	saName := sa
	if saName == "" {
		saName = "default"
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: in.Name, Namespace: in.Namespace, Labels: lbl},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			// As oc's: a rolling update would need a spare node (one pod
			// per node), and the old pods must leave before the new ones
			// take their host ports.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: corev1.PodSpec{
					ServiceAccountName:           saName,
					AutomountServiceAccountToken: ptr(false),
					HostNetwork:                  true,
					NodeSelector:                 nodeSelector,
					Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
						// One pod of a pool per node: two would share a rank.
						// Across namespaces too: one pool of a name per node
						// (vipstack ipfailover refuses a second).
						RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
							LabelSelector:     &metav1.LabelSelector{MatchLabels: sel},
							NamespaceSelector: &metav1.LabelSelector{},
							TopologyKey:       "kubernetes.io/hostname",
						}},
					}},
					Containers: []corev1.Container{c},
					Volumes: []corev1.Volume{{Name: "state", VolumeSource: corev1.VolumeSource{
						HostPath: &corev1.HostPathVolumeSource{Path: StateDir, Type: ptr(corev1.HostPathDirectoryOrCreate)},
					}}},
				},
			},
		},
	}
}

func ptr[T any](v T) *T { return &v }

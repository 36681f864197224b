package nodelab

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
)

// containerdConfig is a node's containerd configuration (version 2, as
// Debian 12's containerd 1.6 reads it): everything it keeps under dir, no
// debug or metrics listener, the CRI plugin on the node's pause image, with
// runc on cgroupfs and the node's CNI configuration.
func containerdConfig(dir, pauseRef string) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) } // a TOML basic string
	return fmt.Sprintf(`version = 2
root = %[1]s
state = %[2]s
oom_score = 0
# Snapshotters this machine kind has no use for, and tracing.
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = %[3]s
[ttrpc]
  address = %[4]s
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = %[5]s
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[6]s
  # Root here lacks CAP_SYS_RESOURCE: a negative oom_score_adj is refused
  # and every sandbox would fail ("can't get final child's PID from pipe").
  restrict_oom_score_adj = true
  disable_apparmor = true
  tolerate_missing_hugetlb_controller = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # Pod network namespaces under the state directory, not /run/netns.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[7]s
    conf_dir = %[8]s
`, q(dir+"/root"), q(dir+"/state"), q(dir+"/containerd.sock"), q(dir+"/containerd.sock.ttrpc"),
		q(dir+"/opt"), q(pauseRef), q(cniBinDir), q(dir+"/cni"))
}

// cniConfig is a node's pod network: a bridge with the node's pod subnet,
// no masquerading (the lab routes the subnets instead) and its IPAM state
// in the node's directory, not /var/lib/cni.
func cniConfig(dir string, subnet netip.Prefix) string {
	conf := map[string]any{
		"cniVersion": "0.4.0",
		"name":       "vsrn",
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": subnet.String()}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
					"dataDir": dir + "/cni-ipam",
				},
			},
		},
	}
	b, _ := json.MarshalIndent(conf, "", "  ")
	return string(b)
}

// kubeletConfig is a node's KubeletConfiguration. Every path is the
// node's own, the cgroups live under cgroupRoot, and what would evict pods
// or collect images on a busy test machine is off.
func kubeletConfig(n *Node, standalone bool) string {
	lines := []string{
		"apiVersion: kubelet.config.k8s.io/v1beta1",
		"kind: KubeletConfiguration",
		// cgroup v1 here: kubelet 1.35 and later refuse it unless told.
		"failCgroupV1: false",
		"cgroupDriver: cgroupfs",
		"cgroupsPerQOS: true",
		"cgroupRoot: " + n.CgroupRoot,
		"failSwapOn: false",
		"staticPodPath: " + n.StaticPodDir,
		// Static pods are picked up within a second, not 20.
		"fileCheckFrequency: 1s",
		"syncFrequency: 10s",
		"podLogsDir: " + n.Dir + "/pods-logs",
		"volumePluginDir: " + n.Dir + "/volume-plugins",
		"address: " + n.IP.String(),
		"port: 10250",
		"readOnlyPort: 0",
		"healthzBindAddress: 127.0.0.1",
		"healthzPort: 10248",
		"containerRuntimeEndpoint: unix://" + n.Dir + "/containerd.sock",
		"authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}",
		"authorization: {mode: AlwaysAllow}",
		"evictionHard: {memory.available: 1Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}",
		"imageGCHighThresholdPercent: 100",
		"imageGCLowThresholdPercent: 99",
		"serializeImagePulls: false",
		"nodeStatusReportFrequency: 10s",
		"resolvConf: /etc/resolv.conf",
	}
	if standalone {
		lines = append(lines, "registerNode: false")
	}
	return strings.Join(lines, "\n") + "\n"
}

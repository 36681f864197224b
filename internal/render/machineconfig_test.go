package render

import (
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/cluster"
)

// TestMachineConfigNotRendered checks that a file balancing the
// machine-config server is refused for a master that keeps haproxy, whose
// pod redirects the API port only, and rendered with NoUpstream.
func TestMachineConfigNotRendered(t *testing.T) {
	c, err := cluster.Parse("c.yaml", []byte(`name: c1
baseDomain: example.com
apiVIPs: [198.18.0.5]
ingressVIPs: [198.18.0.7]
machineNetworks: [198.18.0.0/24]
loadBalancer: {machineConfig: true}
nodes: [{name: m0, role: master, ips: [198.18.0.11]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Files(c, "m0", Options{Interface: "eth0"})
	if err == nil || !strings.Contains(err.Error(), "loadBalancer.machineConfig is not rendered for the upstream haproxy") {
		t.Errorf("Files: %v; want the machine-config balancer refused", err)
	}
	if _, err := Files(c, "m0", Options{Interface: "eth0", NoUpstream: true}); err != nil {
		t.Errorf("Files with NoUpstream: %v", err)
	}
}

// TestLiveMembershipRender checks that a file with live membership renders
// the vipstack pod with the kubelet's kubeconfig, and refuses the upstream
// files, which could not follow a join.
func TestLiveMembershipRender(t *testing.T) {
	c, err := cluster.Parse("c.yaml", []byte(`name: c1
baseDomain: example.com
apiVIPs: [198.18.0.5]
ingressVIPs: [198.18.0.7]
machineNetworks: [198.18.0.0/24]
membership: {kubernetes: true}
nodes: [{name: m0, role: master, ips: [198.18.0.11]}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Files(c, "m0", Options{Interface: "eth0"}); err == nil || !strings.Contains(err.Error(), "would list the file's nodes only") {
		t.Errorf("Files with the upstream daemons: %v; want membership refused", err)
	}
	files, err := Files(c, "m0", Options{NoUpstream: true})
	if err != nil {
		t.Fatal(err)
	}
	pod := string(files[VipstackPodPath])
	for _, want := range []string{"- --kubeconfig\n", "- /var/lib/kubelet/kubeconfig\n", "path: /var/lib/kubelet\n"} {
		if !strings.Contains(pod, want) {
			t.Errorf("the vipstack pod lacks %q:\n%s", want, pod)
		}
	}
}

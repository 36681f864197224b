package render

import (
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/cluster"
)

// TestBGPNotRendered checks that a node announcing VIPs by BGP is refused
// for the upstream keepalived.conf, which would leave them out without a
// word, and rendered with NoUpstream; a node that announces nothing (a
// worker, with api announced) renders as before.
func TestBGPNotRendered(t *testing.T) {
	c, err := cluster.Parse("c.yaml", []byte(`name: c1
baseDomain: example.com
apiVIPs: [198.19.0.5]
ingressVIPs: [198.18.0.7]
machineNetworks: [198.18.0.0/24]
nodes: [{name: m0, role: master, ips: [198.18.0.11]}, {name: w0, role: worker, ips: [198.18.0.21]}]
bgp: {asn: 64512, announce: [api], peers: [{address: 198.18.0.1, asn: 64500}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Files(c, "m0", Options{Interface: "eth0"})
	if err == nil || !strings.Contains(err.Error(), "node m0 announces 198.19.0.5 by BGP (bgp.announce), which the upstream keepalived.conf cannot express") {
		t.Errorf("Files: %v; want the BGP VIP refused for the upstream files", err)
	}
	if _, err := Files(c, "m0", Options{Interface: "eth0", NoUpstream: true}); err != nil {
		t.Errorf("Files with NoUpstream: %v", err)
	}
	if _, err := Files(c, "w0", Options{Interface: "eth0"}); err != nil {
		t.Errorf("Files for the worker: %v", err)
	}
}

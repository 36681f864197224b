package demo

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/vrrp"
)

// The demo cluster's names and addresses. The VIPs sit below the hosts'
// addresses (198.18.0.11 and up, internal/testnet) in the same /24.
const (
	ClusterName = "demo"
	BaseDomain  = "example.com"
	apiVIP      = "198.18.0.5"
	dnsVIP      = "198.18.0.6"
	ingressVIP  = "198.18.0.7"
	machineNet  = "198.18.0.0/24"
	advert      = "100ms"
)

// Domain is the demo cluster's DNS domain.
const Domain = ClusterName + "." + BaseDomain

// The VIPs' kinds as the live view names them.
const (
	KindAPI     = "API"
	KindDNS     = "DNS"
	KindIngress = "Ingress"
)

// Spec is the shape of a demo cluster.
type Spec struct {
	Bootstrap bool
	Masters   int
	Workers   int
	// Advert is the VRRP advertisement interval; 0 means 100 ms.
	Advert time.Duration
}

// NodeSpec is one node of a Spec.
type NodeSpec struct {
	Name  string
	Role  cluster.Role
	Index int // the testnet host index (1-based)
	Addr  netip.Addr
}

// Validate rejects a Spec the cluster file would not accept or the bridge
// cannot hold.
func (s Spec) Validate() error {
	if s.Masters < 1 {
		return fmt.Errorf("demo: Masters = %d: a cluster needs at least one master", s.Masters)
	}
	if s.Workers < 0 || s.Masters+s.Workers > 20 {
		return fmt.Errorf("demo: Masters = %d, Workers = %d: want at most 20 nodes and no negative count", s.Masters, s.Workers)
	}
	if s.Advert != 0 && vrrp.CheckAdvertInterval(3, s.Advert) != nil {
		return fmt.Errorf("demo: Advert = %v: want a multiple of 10ms up to 40.95s (VRRPv3), or 0 for 100ms", s.Advert)
	}
	return nil
}

// Nodes lists the nodes in bridge order: the bootstrap, the masters, the
// workers. Their addresses grow in that order, so among equal priorities
// the later node wins (VRRP's tie-break on the higher address).
func (s Spec) Nodes() []NodeSpec {
	var out []NodeSpec
	add := func(name string, role cluster.Role) {
		i := len(out) + 1
		out = append(out, NodeSpec{Name: name, Role: role, Index: i, Addr: testnet.HostIPv4(i)})
	}
	if s.Bootstrap {
		add("bootstrap", cluster.Bootstrap)
	}
	for i := range s.Masters {
		add(fmt.Sprintf("master-%d", i), cluster.Master)
	}
	for i := range s.Workers {
		add(fmt.Sprintf("worker-%d", i), cluster.Worker)
	}
	return out
}

// ClusterYAML is the cluster file every node agent reads.
func (s Spec) ClusterYAML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# vipstack demo cluster: throwaway, inside network namespaces.\n")
	fmt.Fprintf(&b, "name: %s\nbaseDomain: %s\n", ClusterName, BaseDomain)
	fmt.Fprintf(&b, "apiVIPs: [%s]\ningressVIPs: [%s]\ndnsVIP: %s\n", apiVIP, ingressVIP, dnsVIP)
	fmt.Fprintf(&b, "machineNetworks: [%s]\n", machineNet)
	fmt.Fprintf(&b, "# Fast adverts so that a dead holder is noticed in about 0.4 s.\n")
	adv := advert
	if s.Advert > 0 {
		adv = s.Advert.String()
	}
	fmt.Fprintf(&b, "vrrp: {version: 3, advertInterval: %s}\n", adv)
	b.WriteString("nodes:\n")
	for _, n := range s.Nodes() {
		fmt.Fprintf(&b, "  - {name: %s, role: %s, ips: [%s]}\n", n.Name, n.Role, n.Addr)
	}
	return b.String()
}

// VIPs returns the cluster's VIPs in the live view's column order.
func VIPs() []VIP {
	return []VIP{
		{Kind: KindAPI, Addr: netip.MustParseAddr(apiVIP)},
		{Kind: KindDNS, Addr: netip.MustParseAddr(dnsVIP)},
		{Kind: KindIngress, Addr: netip.MustParseAddr(ingressVIP)},
	}
}

// VIP is one of the cluster's virtual IPs.
type VIP struct {
	Kind string // KindAPI, KindDNS or KindIngress
	Addr netip.Addr
}

// kindOf maps a VRRP instance name ("demo_API") to its VIP kind.
func kindOf(instance string) string {
	switch strings.TrimPrefix(instance, ClusterName+"_") {
	case "API":
		return KindAPI
	case "DNS":
		return KindDNS
	case "INGRESS":
		return KindIngress
	}
	return ""
}

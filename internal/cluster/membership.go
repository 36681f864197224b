package cluster

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
)

// Membership names the live sources a node agent learns nodes from, on top
// of the file's nodes: the Kubernetes Node list (through the kubelet's
// kubeconfig) and mDNS on the VRRP interface. With either, the file may
// leave nodes out and name only the cluster and its VIPs.
type Membership struct {
	Kubernetes bool
	MDNS       bool
}

// Live reports whether any live source is configured.
func (m Membership) Live() bool { return m.Kubernetes || m.MDNS }

// DefaultLBMachineConfigPort is where a master's load balancer takes the
// machine-config server's connections (redirected from VIP:22623) when the
// file sets loadBalancer.machineConfig.
const DefaultLBMachineConfigPort = 22625

// maxPassword bounds an override's password. keepalived sends the first 8
// characters of auth_pass; a longer one (OpenShift's "<name>_api_vip") is
// accepted as it accepts it.
const maxPassword = 64

// override validates one instance's overrides; field is its path, such as
// "vrrp.api".
func override(field string, o *OverrideFile, bad func(string, ...any)) Override {
	var out Override
	if o == nil {
		return out
	}
	if o.VRID != 0 {
		if o.VRID < 1 || o.VRID > 255 {
			bad("%s.vrid: %d is not a virtual router ID (accepted: 1..255)", field, o.VRID)
		} else {
			out.VRID = uint8(o.VRID)
		}
	}
	if o.Priority != 0 {
		if o.Priority < 1 || o.Priority > 254 {
			bad("%s.priority: %d is not a backup priority (accepted: 1..254; 255 is the address owner's, which vipstack never is)", field, o.Priority)
		} else {
			out.Priority = uint8(o.Priority)
		}
	}
	if o.Password != "" {
		if len(o.Password) > maxPassword || strings.ContainsAny(o.Password, " \t\r\n\"'{}#!") {
			bad("%s.password: %q is not accepted (accepted: 1..%d characters without blanks, quotes, braces, '#' or '!'; keepalived sends the first 8)", field, o.Password, maxPassword)
		} else {
			out.Password = o.Password
		}
	}
	return out
}

// VRIDs are the virtual router IDs the cluster's instances use: those
// derived from its name (DeriveVRIDs), each replaced by its override.
func (c *Cluster) VRIDs() VRIDs {
	ids := DeriveVRIDs(c.Name)
	if v := c.VRRP.API.VRID; v != 0 {
		ids.API = v
	}
	if v := c.VRRP.Ingress.VRID; v != 0 {
		ids.Ingress = v
	}
	if v := c.VRRP.DNS.VRID; v != 0 {
		ids.DNS = v
	}
	return ids
}

// String is "API a, DNS d, Ingress i".
func (v VRIDs) String() string {
	return fmt.Sprintf("API %d, DNS %d, Ingress %d", v.API, v.DNS, v.Ingress)
}

// WithNodes returns a copy of c whose Nodes are the listed ones plus live,
// the nodes live sources report, and a note for each live node left out:
// a node the file lists keeps the file's role and addresses; a live node
// keeps only its addresses inside the machine networks that are neither
// a VIP nor another node's (a node with none left is left out, as is one
// whose name is not a DNS label or whose role is not a role). The
// result's instances, peers and backends follow from it as from a file
// listing every node. c is not modified.
func (c *Cluster) WithNodes(live []Node) (*Cluster, []string) {
	out := *c
	out.Nodes = slices.Clone(c.Listed)
	var notes []string
	names := map[string]bool{}
	owner := map[netip.Addr]string{}
	for _, n := range out.Nodes {
		names[n.Name] = true
		for _, a := range n.IPs {
			owner[a] = n.Name
		}
	}
	vips := map[netip.Addr]bool{}
	for _, v := range slices.Concat(c.APIVIPs, c.IngressVIPs) {
		vips[v] = true
	}
	if c.DNSVIP.IsValid() {
		vips[c.DNSVIP] = true
	}
	for _, n := range live {
		if names[n.Name] {
			continue // the file's entry, or the first live one, wins
		}
		if !dnsLabel.MatchString(n.Name) {
			notes = append(notes, fmt.Sprintf("node %q: not a DNS label", n.Name))
			continue
		}
		switch n.Role {
		case Bootstrap, Master, Worker:
		default:
			notes = append(notes, fmt.Sprintf("node %s: role %q is not a role (bootstrap, master, worker)", n.Name, n.Role))
			continue
		}
		keep := Node{Name: n.Name, Role: n.Role}
		for _, a := range n.IPs {
			a = a.Unmap()
			in := false
			for _, p := range c.MachineNetworks {
				in = in || p.Contains(a)
			}
			switch {
			case !in, vips[a], slices.Contains(keep.IPs, a):
			case owner[a] != "":
				notes = append(notes, fmt.Sprintf("node %s: address %s is also node %s's; left out", n.Name, a, owner[a]))
			default:
				keep.IPs = append(keep.IPs, a)
			}
		}
		if len(keep.IPs) == 0 {
			notes = append(notes, fmt.Sprintf("node %s: no address in the machine networks (%s) that is not a VIP or another node's", n.Name, joinPrefixes(c.MachineNetworks)))
			continue
		}
		if len(keep.IPs) > MaxNodeIPs {
			keep.IPs = keep.IPs[:MaxNodeIPs]
		}
		if len(out.Nodes) >= MaxNodes {
			notes = append(notes, fmt.Sprintf("node %s: more than the %d nodes accepted", n.Name, MaxNodes))
			continue
		}
		slices.SortFunc(keep.IPs, netip.Addr.Compare)
		names[n.Name] = true
		for _, a := range keep.IPs {
			owner[a] = n.Name
		}
		out.Nodes = append(out.Nodes, keep)
	}
	sort.SliceStable(out.Nodes, func(i, j int) bool { return out.Nodes[i].Name < out.Nodes[j].Name })
	return &out, notes
}

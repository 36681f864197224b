// Package cluster reads vipstack's cluster file (cluster.yaml), the one
// description of an on-premise cluster from which every node derives what it
// runs: which VRRP instances with which IDs, priorities, checks and peers;
// whether it runs the API load balancer; and what the cluster DNS answers.
//
// The derivation follows OpenShift's on-premise networking (seeds 000, 001
// and 003) so that a vipstack node can join a running OpenShift cluster:
// virtual router IDs are a Fletcher-8 checksum of "<name>-api",
// "<name>-dns" and "<name>-ingress" plus one, bumped on collision, and the
// priorities and check weights are those of OpenShift's keepalived.conf.
//
// apiVIPs and ingressVIPs may hold both address families (OpenShift's
// dual-stack VIPs, with the same families in the same order in both
// lists): each family is its own instance with the same VRID, named
// "<name>_API_0" for the first entry's family and "<name>_API_1" for the
// other, IPv4 on the configured VRRP version and IPv6 on VRRPv3.
// docs/design/dual-stack-vips.md records the sources.
//
// Every VIP (apiVIPs, ingressVIPs, dnsVIP) is a unicast address that is
// neither link-local (only its own link reaches it, and the API VIP's
// redirect refuses it) nor IPv4-mapped IPv6 (::ffff:a.b.c.d, which no
// packet carries: write a.b.c.d); a node address may be link-local but not
// IPv4-mapped either.
//
// The bgp section (bgp.go) takes roles or single VIPs out of VRRP: a node
// announces them as host routes to its peers (internal/bgp) while the
// checks of the instance that would have held them pass (Plan.BGP); such
// VIPs may lie outside machineNetworks. docs/cluster-mode.md documents
// every field.
package cluster

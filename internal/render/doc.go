// Package render turns a cluster file (package cluster) into what one node
// installs: a Kubernetes static pod that runs `vipstack node` with only the
// capabilities it needs (NET_ADMIN, NET_RAW, NET_BIND_SERVICE) instead of a
// privileged container, and, for users who keep the upstream daemons, the
// equivalent keepalived.conf (VRRP, RFC 3768 and RFC 5798), haproxy.cfg and
// CoreDNS Corefile with their three static pods, shaped like OpenShift's
// on-premise networking (seed 000).
//
// Everything is derived from what the node agent runs: the keepalived.conf
// from cluster.Cluster.PlanFor, the haproxy.cfg from cluster.Cluster.LBConfig
// (HAProxyCfg writes that model; haproxycfg reads it back unchanged), so the
// upstream daemons and `vipstack node` never disagree. Output is
// deterministic: the same cluster file and options give the same bytes.
package render

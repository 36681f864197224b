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
// Each of apiVIPs and ingressVIPs holds one address family. OpenShift's
// dual-stack VIP pairs are not accepted yet: docs/design/dual-stack-vips.md
// records what OpenShift does with them, and what is still open.
package cluster

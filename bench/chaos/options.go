package main

import (
	"io"
	"time"

	"github.com/vipstack/vipstack/internal/chaos"
)

// options configure one chaos run.
type options struct {
	Seed    uint64
	Faults  int
	Nodes   int
	Advert  time.Duration
	Verbose bool
	// KeepLogs keeps the daemons' logs also when the run has no violation.
	KeepLogs bool
	Bin      string
	Prefix   string // namespace prefix; default "vx" ("ck" in Kubernetes mode, "vm" mixed, "vg" BGP)
	// Weights restricts the fault kinds (nil: chaos.DefaultWeights, or
	// chaos.AgentWeights in Kubernetes mode, chaos.MixedWeights mixed).
	Weights map[chaos.Kind]int
	// K8s drives Kubernetes agents (a real kube-apiserver, the controller,
	// one agent per node, Services LoadBalancer Services) instead of
	// `vipstack node`.
	K8s bool
	// Mixed drives keepalived 2.2.7 and vipstack nodes in the same VRRP
	// groups (VRRPv2 IPv4, VRRPv3 IPv4 and IPv6) instead of `vipstack
	// node`.
	Mixed bool
	// FRR, with Mixed, puts FRR 8.4's vrrpd on every third node
	// (keepalived, vipstack, FRR in turn), in the same groups.
	FRR bool
	// BGP drives `vipstack node`s on their own subnets announcing the API
	// and Ingress VIPs by BGP to FRR (every node at once, ECMP) instead
	// of a VRRP cluster.
	BGP bool
	// Router, with BGP, is the router's implementation: "frr" (FRR 8.4:
	// zebra, bfdd, bgpd; the default) or "bird" (BIRD 2).
	Router string
	// Family, with BGP, is the VIPs' family: "4" (the default), "6" or
	// "both" (IPv6 VIPs over a second session per node, MP-BGP).
	Family string
	// Services is how many LoadBalancer Services (VIPs) in Kubernetes mode.
	Services int
	// MachineStall is chaos.Config.MachineStall: a longer pause of the
	// sampler is taken as a stall of every node (0: off).
	MachineStall time.Duration
	// Log receives the lab's progress lines (Kubernetes mode); nil: none.
	Log io.Writer
}

// result is a finished run.
type result struct {
	Mode     string // what ran, for the report's first line
	Report   chaos.Report
	Injected map[chaos.Kind]int
	Skipped  []string
	Failed   []string // injections that did not work
	Config   chaos.Config
	Elapsed  time.Duration // from the first fault to the end of sampling
	Sampled  string        // what the mode sampled beside the nodes, and its figures (mode.judge)
}

// OK reports whether the run found nothing wrong.
func (r result) OK() bool { return len(r.Report.Violations) == 0 && len(r.Failed) == 0 }

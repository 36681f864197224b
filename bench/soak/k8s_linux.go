package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/vipstack/vipstack/internal/k8s/k8slab"
)

// startK8s starts a k8slab lab (a real kube-apiserver, `vipstack
// controller`, o.K8sNodes agents under their supervisors, 4 LoadBalancer
// Services) and samples node 0's agent (its engine and supervisor) and the
// controller.
func startK8s(ctx context.Context, o options) (*part, error) {
	if os.Getenv("VIPSTACK_SKIP_KUBE") == "1" {
		return nil, fmt.Errorf("VIPSTACK_SKIP_KUBE=1: the k8s part needs kube-apiserver and etcd")
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	ctrlMetrics := fmt.Sprintf("127.0.0.1:%d", port)
	prog := &k8slab.Program{Out: o.Log}
	var lab *k8slab.Lab
	if err := prog.Do(func() {
		lab = k8slab.Start(ctx, prog, k8slab.Options{Nodes: o.K8sNodes, Prefix: o.Prefix + "k", Bin: o.Bin,
			Advert: time.Second, Services: 4, Supervisor: true, Log: o.Log,
			ControllerArgs: []string{"--metrics-addr", ctrlMetrics}})
	}); err != nil {
		prog.Close()
		return nil, err
	}
	n0, peer := lab.Nodes[0], lab.Nodes[1]
	p := &part{Name: "k8s", Close: prog.Close}
	p.Subjects = []subject{
		{Part: p.Name, Name: n0.Name + " agent engine", pid: n0.EnginePid, metrics: n0.Metrics},
		{Part: p.Name, Name: n0.Name + " agent supervisor", pid: n0.AgentPid},
		{Part: p.Name, Name: "controller", pid: lab.ControllerPid,
			metrics: func(ctx context.Context) (string, error) {
				return httpGet(ctx, (&net.Dialer{}).DialContext, "http://"+ctrlMetrics+"/metrics")
			}},
	}
	p.Steps = []step{
		{"Service s00 deleted", func(ctx context.Context) error { return lab.DeleteService(ctx, 0) }},
		{"Service s00 created again", func(ctx context.Context) error { return lab.CreateService(ctx, 0) }},
		{"the API server cut off from " + n0.Name, func(context.Context) error { n0.SetAPI(false); return nil }},
		{"the API server back for " + n0.Name, func(context.Context) error { n0.SetAPI(true); return nil }},
		{peer.Name + "'s cable pulled", func(context.Context) error { return peer.SetCut(true) }},
		{peer.Name + "'s cable plugged", func(context.Context) error { return peer.SetCut(false) }},
	}
	return p, nil
}

// freePort is a TCP port free on the host's loopback now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

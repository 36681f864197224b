package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/demo"
	"github.com/vipstack/vipstack/internal/procfs"
	"github.com/vipstack/vipstack/internal/testnet"
)

// startNode starts internal/demo's cluster of o.Masters masters running
// `vipstack node` and samples master-0's engine and supervisor.
func startNode(ctx context.Context, o options) (*part, error) {
	spec := demo.Spec{Masters: o.Masters, Advert: time.Second}
	c, err := demo.Start(ctx, spec, demo.Options{Bin: o.Bin, Prefix: o.Prefix + "n", View: -1})
	if err != nil {
		return nil, err
	}
	n0, peer := c.Nodes[0], c.Nodes[1]
	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", cluster.DefaultMetricsPort)
	p := &part{Name: "node", Close: c.Close}
	p.Subjects = []subject{
		{Part: p.Name, Name: n0.Name + " engine", pid: n0.EnginePid,
			metrics: func(ctx context.Context) (string, error) { return httpGet(ctx, dialer(n0.Host), metrics) }},
		{Part: p.Name, Name: n0.Name + " supervisor", pid: func() int { return parentOf(n0.EnginePid()) }},
	}
	withWorker := spec
	withWorker.Workers = 1
	reloads := 0
	p.Steps = []step{
		{"SIGHUP with a comment edit", func(context.Context) error {
			reloads++
			return c.Reload(fmt.Sprintf("soak reload %d", reloads))
		}},
		{n0.Name + "'s API server down", func(context.Context) error { return n0.SetAPI(false) }},
		{n0.Name + "'s API server up", func(context.Context) error { return n0.SetAPI(true) }},
		{peer.Name + "'s cable pulled", func(context.Context) error { return peer.SetCut(true) }},
		{peer.Name + "'s cable plugged", func(context.Context) error { return peer.SetCut(false) }},
		{"a worker added to the cluster file", func(context.Context) error { return c.Rewrite(withWorker.ClusterYAML()) }},
		{"the worker removed", func(context.Context) error { return c.Rewrite(spec.ClusterYAML()) }},
	}
	// Settle: every VIP has one holder for a second, and master-0's
	// engine serves metrics.
	for _, v := range demo.VIPs() {
		if _, err := c.WaitHolder(ctx, v.Addr, nil, time.Second, 90*time.Second); err != nil {
			c.Close()
			return nil, fmt.Errorf("the cluster did not settle: %s VIP %s: %w", v.Kind, v.Addr, err)
		}
	}
	if _, err := p.Subjects[0].metrics(ctx); err != nil || n0.EnginePid() == 0 {
		c.Close()
		return nil, errors.Join(errors.New("master-0's engine does not serve metrics"), err)
	}
	return p, nil
}

// parentOf is pid's parent, 0 for none.
func parentOf(pid int) int {
	if pid == 0 {
		return 0
	}
	return procfs.PPid(pid)
}

// dialer dials from inside h's network namespace.
func dialer(h *testnet.Host) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var conn net.Conn
		err := h.Do(func() error {
			var err error
			conn, err = (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, addr)
			return err
		})
		return conn, err
	}
}

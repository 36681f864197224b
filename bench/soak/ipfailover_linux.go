package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vipstack/vipstack/internal/procfs"
	"github.com/vipstack/vipstack/internal/testnet"
)

const (
	ipfMonitorPort = 8080
	ipfMetrics     = "127.0.0.1:9650"
)

// ipfVIPs is OPENSHIFT_HA_VIRTUAL_IPS for n VIPs: 250 per /24 from
// 198.18.16.0, as bench/ipfailover.
func ipfVIPs(n int) string {
	var parts []string
	for net := 16; n > 0; net++ {
		k := min(n, 250)
		parts = append(parts, fmt.Sprintf("198.18.%d.1-%d", net, k))
		n -= k
	}
	return strings.Join(parts, ",")
}

// monitor is a node's service on the monitor port, which the pool's check
// connects to; closing it fails the node's check.
type monitor struct {
	h  *testnet.Host
	mu sync.Mutex
	ln net.Listener
}

func (m *monitor) set(up bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !up {
		if m.ln != nil {
			m.ln.Close()
			m.ln = nil
		}
		return nil
	}
	if m.ln != nil {
		return nil
	}
	var ln net.Listener
	if err := m.h.Do(func() (err error) { ln, err = net.Listen("tcp", fmt.Sprintf(":%d", ipfMonitorPort)); return err }); err != nil {
		return err
	}
	m.ln = ln
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return nil
}

// startIPFailover runs `vipstack ipfailover` with a pool of o.VIPs VIPs on
// o.IPFNodes nodes and samples node 1's engine and supervisor.
func startIPFailover(ctx context.Context, o options) (*part, error) {
	topo, err := testnet.Build(testnet.Options{Hosts: o.IPFNodes, Prefix: o.Prefix + "i"})
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "vsok-ipfailover-")
	if err != nil {
		topo.Close()
		return nil, err
	}
	var mons []*monitor
	var procs []int
	p := &part{Name: "ipfailover", Close: func() {
		for _, pid := range procs {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		for _, m := range mons {
			_ = m.set(false)
		}
		topo.Close()
		os.RemoveAll(work)
	}}
	env := []string{"PATH=" + os.Getenv("PATH"),
		"OPENSHIFT_HA_CONFIG_NAME=soak",
		"OPENSHIFT_HA_VIRTUAL_IPS=" + ipfVIPs(o.VIPs),
		"OPENSHIFT_HA_VIP_GROUPS=6",
		fmt.Sprintf("OPENSHIFT_HA_REPLICA_COUNT=%d", o.IPFNodes),
		fmt.Sprintf("OPENSHIFT_HA_MONITOR_PORT=%d", ipfMonitorPort),
		"OPENSHIFT_HA_NETWORK_INTERFACE=eth0",
		"OPENSHIFT_HA_VRRP_ID_OFFSET=10",
	}
	for i, h := range topo.Hosts {
		m := &monitor{h: h}
		mons = append(mons, m)
		if err := m.set(true); err != nil {
			p.Close()
			return nil, err
		}
		dir := filepath.Join(work, fmt.Sprintf("node%d", i+1))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			p.Close()
			return nil, err
		}
		cmd := h.Command(o.Bin, "ipfailover", "--state-dir", dir, "--metrics-addr", ipfMetrics)
		cmd.Env = env
		logf, err := os.Create(filepath.Join(dir, "log"))
		if err != nil {
			p.Close()
			return nil, err
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		err = h.Start(cmd)
		logf.Close()
		if err != nil {
			p.Close()
			return nil, err
		}
		procs = append(procs, cmd.Process.Pid)
		go func() { _ = cmd.Wait() }()
	}
	h0, peer := topo.Hosts[0], topo.Hosts[1]
	sup := procs[0]
	engine := func() int { return procfs.ChildOf(sup) }
	// Ready: the engine serves metrics and the pool is at rest (every VIP
	// held somewhere is more than this part needs; the engine's metrics
	// answering is enough to sample).
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := httpGet(ctx, dialer(h0), "http://"+ipfMetrics+"/metrics"); err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			p.Close()
			return nil, errors.New("node 1's vipstack ipfailover does not serve metrics after 2 minutes")
		}
		time.Sleep(500 * time.Millisecond)
	}
	p.Subjects = []subject{
		{Part: p.Name, Name: "node1 engine", pid: engine,
			metrics: func(ctx context.Context) (string, error) {
				return httpGet(ctx, dialer(h0), "http://"+ipfMetrics+"/metrics")
			}},
		{Part: p.Name, Name: "node1 supervisor", pid: func() int { return sup }},
	}
	p.Steps = []step{
		{"node1's monitor port closed", func(context.Context) error { return mons[0].set(false) }},
		{"node1's monitor port open", func(context.Context) error { return mons[0].set(true) }},
		{"node2's cable pulled", func(context.Context) error { return peer.Cut(true) }},
		{"node2's cable plugged", func(context.Context) error { return peer.Cut(false) }},
		{"SIGHUP to node1 (ignored)", func(context.Context) error { return syscall.Kill(sup, syscall.SIGHUP) }},
	}
	return p, nil
}

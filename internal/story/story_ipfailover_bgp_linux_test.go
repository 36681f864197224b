//go:build linux

package story_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/ipfailover"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/routedlab"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testutil"
)

// The pool of TestStoryIPFailoverBGP: two VIPs outside every subnet, a
// monitor port every node serves, checked every 0.5 s.
const (
	ipfBGPVIPs     = "198.19.1.1-2"
	ipfBGPPort     = 8080
	ipfStatusAddr  = "127.0.0.1:9661"
	ipfMetricsAddr = "127.0.0.1:9662"
	ipfBGPInterval = "0.5"
)

// monitorPort is a node's monitored port: it answers "node I" and can be
// closed (the check fails) and opened again.
type monitorPort struct {
	t    *testing.T
	ns   string
	name string
	mu   sync.Mutex
	ln   net.Listener
}

func (m *monitorPort) open() {
	m.t.Helper()
	var ln net.Listener
	if err := routedlab.Do(m.ns, func() (err error) { ln, err = net.Listen("tcp", fmt.Sprintf(":%d", ipfBGPPort)); return err }); err != nil {
		m.t.Fatal(err)
	}
	m.mu.Lock()
	m.ln = ln
	m.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, m.name)
			c.Close()
		}
	}()
}

func (m *monitorPort) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ln != nil {
		m.ln.Close()
		m.ln = nil
	}
}

// ipfailoverBGPEnv is node i's environment (1-based): the pool announced
// to every router over eBGP, node 1's session with BFD at 100 ms.
func ipfailoverBGPEnv(i int) []string {
	env := []string{
		ipfailover.EnvConfigName + "=pool", ipfailover.EnvVirtualIPs + "=" + ipfBGPVIPs,
		fmt.Sprintf("%s=%d", ipfailover.EnvMonitorPort, ipfBGPPort), ipfailover.EnvCheckInterval + "=" + ipfBGPInterval,
		fmt.Sprintf("%s=%d", ipfailover.EnvBGPASN, bgpNodeASN), fmt.Sprintf("%s=%d", ipfailover.EnvBGPPeerASN, bgpRouterASN),
		ipfailover.EnvBGPPeers + "=198.18.1.1,198.18.2.1,198.18.3.1", ipfailover.EnvBGPHoldTime + "=30",
		ipfailover.EnvBGPGracefulRestart + "=120",
	}
	if i == 1 {
		env = append(env, ipfailover.EnvBGPBFDInterval+"=100")
	}
	return env
}

// ipfailoverStatus reads the pool's status in ns.
func ipfailoverStatus(bin, ns string) (ipfailover.Status, error) {
	var s ipfailover.Status
	out, err := routedlab.Exec(ns, bin, "status", "--addr", ipfStatusAddr, "-o", "json")
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		return s, fmt.Errorf("status JSON: %v: %q", err, out)
	}
	return s, nil
}

// TestStoryIPFailoverBGP runs `vipstack ipfailover` on three nodes, each
// alone on its subnet behind FRR, with the pool announced by BGP
// (OPENSHIFT_HA_BGP_*): both VIPs are ECMP over the three nodes and the
// client's connections reach all of them; a node whose monitor port stops
// answering withdraws its routes, and announces them again when it
// answers; a planned restart (--bgp-stop-keeps-routes, graceful restart)
// keeps the node's routes; a graceful stop withdraws them before the
// process exits.
func TestStoryIPFailoverBGP(t *testing.T) {
	routedlab.RequireFRR(t)
	const nodes = 3
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	vips := []netip.Addr{netip.MustParseAddr("198.19.1.1"), netip.MustParseAddr("198.19.1.2")}
	l := routedlab.New(t, routedlab.Options{Prefix: "vip4", Nodes: nodes})
	frr := l.StartFRR(t, bgpFRRConf(nodes), routedlab.BFDProfileFast)
	ports := make([]*monitorPort, nodes)
	var logs []*syncbuf.Buffer
	// Node 2 stops for a planned restart, keeping its routes.
	start := func(i int) (*os.Process, <-chan struct{}) {
		b := &syncbuf.Buffer{}
		logs = append(logs, b)
		args := append(ipfailoverBGPEnv(i+1), bin, "ipfailover", "--no-supervisor", "--status-addr", ipfStatusAddr,
			"--state-dir", filepath.Join(l.Dir, fmt.Sprintf("n%d", i+1)), "--log-level", "debug")
		switch i {
		case 0:
			args = append(args, "--metrics-addr", ipfMetricsAddr)
		case 1:
			args = append(args, "--bgp-stop-keeps-routes")
		}
		c, done := routedlab.Start(t, l.Nodes[i], b, nil, "env", args...)
		return c.Process, done
	}
	procs := make([]*os.Process, nodes)
	exited := make([]<-chan struct{}, nodes)
	for i := range nodes {
		ports[i] = &monitorPort{t: t, ns: l.Nodes[i], name: fmt.Sprintf("node %d", i+1)}
		ports[i].open()
		t.Cleanup(ports[i].close)
		procs[i], exited[i] = start(i)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, b := range logs {
				t.Logf("---- process %d log:\n%s", i+1, testutil.Tail(b.String(), 40))
			}
			out, _ := frr.Vtysh("show bgp ipv4 unicast")
			t.Logf("---- show bgp ipv4 unicast:\n%s", out)
		}
	})

	t.Run("ecmp", func(t *testing.T) {
		for _, v := range vips {
			l.WantNexthops(t, v, 30*time.Second, 1, 2, 3)
		}
		seen := map[string]int{}
		for range 60 {
			body, err := dialVia(l, netip.AddrPortFrom(vips[0], ipfBGPPort))
			if err != nil {
				t.Fatalf("client through the VIP: %v", err)
			}
			seen[body]++
		}
		if len(seen) != nodes {
			t.Errorf("60 connections from the client reached %v, want all %d nodes", seen, nodes)
		}
	})

	t.Run("status", func(t *testing.T) {
		testutil.Eventually(t, 10*time.Second, func() error {
			s, err := ipfailoverStatus(bin, l.Nodes[0])
			if err != nil {
				return err
			}
			if s.Mode != "bgp" || s.Held != 2 || s.BGP == nil || len(s.BGP.Peers) != 1 || s.BGP.Peers[0].Address != "198.18.1.1" ||
				s.BGP.Peers[0].Session != "established" || s.BGP.Peers[0].BFD != "up" {
				return fmt.Errorf("node 1's status: mode %s, %d announced, BGP %+v; want bgp, 2, its one router established with BFD up", s.Mode, s.Held, s.BGP)
			}
			for _, r := range s.BGP.Routes {
				if !r.Announced || r.Role != "pool" || !strings.Contains(r.Reason, "chk_pool ok") {
					return fmt.Errorf("route %+v, want announced for the pool with chk_pool ok", r)
				}
			}
			return nil
		})
		metrics, err := routedlab.Exec(l.Nodes[0], "curl", "-sf", "http://"+ipfMetricsAddr+"/metrics")
		for _, w := range []string{`vipstack_bgp_session_up{peer="198.18.1.1",peer_asn="64500"} 1`, `vipstack_bgp_vip_announced{role="pool",vip="198.19.1.2"} 1`,
			"vipstack_ipfailover_vips_held 2"} {
			if err != nil || !strings.Contains(metrics, w) {
				t.Errorf("node 1's metrics lack %s (%v):\n%s", w, err, metrics)
			}
		}
		out, err := routedlab.Exec(l.Nodes[0], bin, "status", "--addr", ipfStatusAddr)
		if err != nil || !strings.Contains(out, "ipfailover pool: running, 2 VIPs announced by BGP on eth0 from 198.18.1.10") ||
			!strings.Contains(out, "peer 198.18.1.1 AS 64500 (eBGP): established, 2 routes sent, BFD up") || !strings.Contains(out, "route 198.19.1.2/32 (pool): announced: eligible: chk_pool ok") {
			t.Errorf("vipstack status on node 1: %v\n%s", err, out)
		}
	})

	t.Run("check-fails-withdraws", func(t *testing.T) {
		ports[1].close()
		for _, v := range vips {
			l.WantNexthops(t, v, 5*time.Second, 1, 3)
		}
		s, err := ipfailoverStatus(bin, l.Nodes[1])
		if err != nil {
			t.Fatal(err)
		}
		if s.Held != 0 || s.BGP == nil || len(s.BGP.Routes) != 2 || s.BGP.Routes[0].Announced || !strings.Contains(s.BGP.Routes[0].Reason, "not eligible: chk_pool failing") {
			t.Errorf("node 2's status with its port closed: %d announced, %+v; want none, chk_pool failing", s.Held, s.BGP)
		}
		for range 10 {
			if body, err := dialVia(l, netip.AddrPortFrom(vips[1], ipfBGPPort)); err != nil || body == "node 2" {
				t.Fatalf("client through the VIP with node 2 withdrawn: %v %q", err, body)
			}
		}
		ports[1].open()
		for _, v := range vips {
			l.WantNexthops(t, v, 5*time.Second, 1, 2, 3)
		}
	})

	t.Run("planned-restart-keeps-routes", func(t *testing.T) {
		// Node 2 stops with --bgp-stop-keeps-routes: no withdrawal, its
		// sessions close without a NOTIFICATION, and bgpd keeps the
		// routes by graceful restart until the next process is back.
		if err := procs[1].Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-exited[1]:
		case <-time.After(20 * time.Second):
			t.Fatal("node 2's process has not exited 20 s after SIGTERM")
		}
		procs[1], exited[1] = start(1)
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			got, err := l.Nexthops(vips[0])
			if err != nil || len(got) != nodes {
				t.Fatalf("router's route to %v during node 2's restart: %v %v, want via all %d nodes", vips[0], got, err, nodes)
			}
			time.Sleep(100 * time.Millisecond)
		}
		testutil.Eventually(t, 20*time.Second, func() error {
			s, err := ipfailoverStatus(bin, l.Nodes[1])
			if err != nil {
				return err
			}
			if s.Held != 2 || s.BGP == nil || len(s.BGP.Peers) != 1 || s.BGP.Peers[0].Session != "established" {
				return fmt.Errorf("restarted node 2: %d announced, %+v; want 2 over an established session", s.Held, s.BGP)
			}
			return nil
		})
		l.WantNexthops(t, vips[0], time.Second, 1, 2, 3)
	})

	t.Run("graceful-stop-withdraws", func(t *testing.T) {
		if err := procs[2].Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-exited[2]:
		case <-time.After(20 * time.Second):
			t.Fatal("node 3's process has not exited 20 s after SIGTERM")
		}
		// The hold timer (30 s) would take far longer; bgpd takes a
		// moment to program the kernel after the UPDATE.
		for _, v := range vips {
			l.WantNexthops(t, v, 2*time.Second, 1, 2)
		}
		if !strings.Contains(logs[2].String(), "bgp: withdrew") {
			t.Errorf("node 3's log has no withdrawal before it exited:\n%s", testutil.Tail(logs[2].String(), 30))
		}
		if out, err := routedlab.Exec(l.Nodes[2], "ip", "-4", "addr", "show", "dev", "lo"); err != nil || strings.Contains(out, "198.19.1.") {
			t.Errorf("node 3's loopback after the stop still holds a VIP (%v):\n%s", err, out)
		}
	})
}

// dialVia connects from the routed lab's client to ap and returns what
// the node there answers.
func dialVia(l *routedlab.Lab, ap netip.AddrPort) (string, error) {
	var body string
	err := routedlab.Do(l.Client, func() error {
		conn, err := net.DialTimeout("tcp", ap.String(), 2*time.Second)
		if err != nil {
			return err
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
		b, err := io.ReadAll(conn)
		body = string(b)
		return err
	})
	return body, err
}

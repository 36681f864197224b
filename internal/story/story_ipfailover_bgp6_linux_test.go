//go:build linux

package story_test

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/ipfailover"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/routedlab"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testutil"
)

// ipfBGP6Password is the TCP MD5 password of TestStoryIPFailoverBGPIPv6's
// sessions.
const ipfBGP6Password = "ipf-md5-key"

// ipfailoverBGP6Env is a node's environment: an IPv6 pool announced over
// IPv6 sessions carrying password, with a community, a MED and the AS
// path prepended once.
func ipfailoverBGP6Env(password string) []string {
	return []string{
		ipfailover.EnvConfigName + "=pool6", ipfailover.EnvVirtualIPs + "=fd00:99::1-2",
		fmt.Sprintf("%s=%d", ipfailover.EnvMonitorPort, ipfBGPPort), ipfailover.EnvCheckInterval + "=" + ipfBGPInterval,
		fmt.Sprintf("%s=%d", ipfailover.EnvBGPASN, bgpNodeASN), fmt.Sprintf("%s=%d", ipfailover.EnvBGPPeerASN, bgpRouterASN),
		ipfailover.EnvBGPPeers + "=fd00:1::1,fd00:2::1", ipfailover.EnvBGPHoldTime + "=30",
		ipfailover.EnvBGPPassword + "=" + password,
		ipfailover.EnvBGPCommunities + "=64513:300", ipfailover.EnvBGPMED + "=50", ipfailover.EnvBGPPrepend + "=1",
	}
}

// ipfBGP6FRRConf peers over IPv6 (IPv6 unicast only) with both nodes,
// with the MD5 password, ECMP.
func ipfBGP6FRRConf(nodes int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "log stdout informational\nrouter bgp %d\n bgp router-id 198.18.100.1\n no bgp ebgp-requires-policy\n", bgpRouterASN)
	for i := 1; i <= nodes; i++ {
		a := routedlab.SubnetV6(i, 0x10)
		fmt.Fprintf(&b, " neighbor %s remote-as %d\n neighbor %s timers 10 30\n neighbor %s timers connect 1\n neighbor %s password %s\n",
			a, bgpNodeASN, a, a, a, ipfBGP6Password)
	}
	b.WriteString(" address-family ipv4 unicast\n")
	for i := 1; i <= nodes; i++ {
		fmt.Fprintf(&b, "  no neighbor %s activate\n", routedlab.SubnetV6(i, 0x10))
	}
	b.WriteString(" exit-address-family\n address-family ipv6 unicast\n  maximum-paths 8\n")
	for i := 1; i <= nodes; i++ {
		fmt.Fprintf(&b, "  neighbor %s activate\n", routedlab.SubnetV6(i, 0x10))
	}
	b.WriteString(" exit-address-family\n!\n")
	return b.String()
}

// TestStoryIPFailoverBGPIPv6 runs `vipstack ipfailover` with an IPv6
// pool on two nodes, each alone on its subnet behind FRR, over IPv6
// sessions with a TCP MD5 password: a node with the wrong password gets
// no session (FRR keeps only the other node's route, and the node's
// status says why nothing is announced); with the right one both VIPs
// are ECMP over both nodes' IPv6 addresses in the router's kernel table
// and the client's connections over IPv6 reach both, FRR seeing the
// pool's community, MED and prepended AS path on them; a graceful stop
// withdraws the stopped node's routes.
func TestStoryIPFailoverBGPIPv6(t *testing.T) {
	routedlab.RequireFRR(t)
	const nodes = 2
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	vips := []netip.Addr{netip.MustParseAddr("fd00:99::1"), netip.MustParseAddr("fd00:99::2")}
	l := routedlab.New(t, routedlab.Options{Prefix: "vip6", Nodes: nodes})
	frr := l.StartFRR(t, ipfBGP6FRRConf(nodes), "")
	logs := make([]*syncbuf.Buffer, nodes)
	start := func(i int, password string) (stop func()) {
		logs[i] = &syncbuf.Buffer{}
		args := append(ipfailoverBGP6Env(password), bin, "ipfailover", "--no-supervisor", "--status-addr", ipfStatusAddr,
			"--state-dir", filepath.Join(l.Dir, fmt.Sprintf("n%d", i+1)))
		c, done := routedlab.Start(t, l.Nodes[i], logs[i], nil, "env", args...)
		return func() {
			if err := c.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("node %d's process has not exited 20 s after SIGTERM", i+1)
			}
		}
	}
	for i := range nodes {
		port := &monitorPort{t: t, ns: l.Nodes[i], name: fmt.Sprintf("node %d", i+1)}
		port.open()
		t.Cleanup(port.close)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, b := range logs {
				if b != nil {
					t.Logf("---- process %d log:\n%s", i+1, testutil.Tail(b.String(), 40))
				}
			}
			out, _ := frr.Vtysh("show bgp ipv6 unicast summary")
			t.Logf("---- show bgp ipv6 unicast summary:\n%s", out)
		}
	})
	stop1 := start(0, ipfBGP6Password)
	stop2 := start(1, "not-the-key")

	t.Run("wrong-password-no-session", func(t *testing.T) {
		for _, v := range vips {
			l.WantNexthops(t, v, 30*time.Second, 1)
		}
		// Several connect retries (1 s apart on FRR's side) have failed
		// by now; the route stays via node 1 alone.
		time.Sleep(3 * time.Second)
		if got, err := l.Nexthops(vips[0]); err != nil || len(got) != 1 {
			t.Errorf("router's route to %v with node 2's password wrong: %v %v, want via node 1 only", vips[0], got, err)
		}
		s, err := ipfailoverStatus(bin, l.Nodes[1])
		if err != nil {
			t.Fatal(err)
		}
		if s.BGP == nil || len(s.BGP.Peers) != 1 || s.BGP.Peers[0].Session == "established" {
			t.Errorf("node 2's status with the wrong password: %+v; want its one peer not established", s.BGP)
		}
	})
	stop2()
	stop2 = start(1, ipfBGP6Password)

	t.Run("ecmp-over-ipv6", func(t *testing.T) {
		for _, v := range vips {
			l.WantNexthops(t, v, 30*time.Second, 1, 2)
		}
		seen := map[string]int{}
		for range 40 {
			body, err := dialVia(l, netip.AddrPortFrom(vips[1], ipfBGPPort))
			if err != nil {
				t.Fatalf("client through the IPv6 VIP: %v", err)
			}
			seen[body]++
		}
		if len(seen) != nodes {
			t.Errorf("40 connections from the client reached %v, want both nodes", seen)
		}
		path, err := frr.Vtysh("show bgp ipv6 unicast fd00:99::1/128")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"64513:300", "metric 50", fmt.Sprintf("%d %d", bgpNodeASN, bgpNodeASN)} {
			if !strings.Contains(path, want) {
				t.Errorf("FRR's paths to fd00:99::1 lack %q (the pool's community, MED and prepended AS path):\n%s", want, path)
			}
		}
		out, err := routedlab.Exec(l.Nodes[0], bin, "status", "--addr", ipfStatusAddr)
		if err != nil || !strings.Contains(out, "peer fd00:1::1 AS 64500 (eBGP): established, 2 routes sent") ||
			!strings.Contains(out, "route fd00:99::2/128 (pool6): announced: eligible: chk_pool6 ok") {
			t.Errorf("vipstack status on node 1: %v\n%s", err, out)
		}
	})

	t.Run("graceful-stop-withdraws", func(t *testing.T) {
		stop1()
		for _, v := range vips {
			l.WantNexthops(t, v, 2*time.Second, 2)
		}
		if out, err := routedlab.Exec(l.Nodes[0], "ip", "-6", "addr", "show", "dev", "lo"); err != nil || strings.Contains(out, "fd00:99::") {
			t.Errorf("node 1's loopback after the stop still holds a VIP (%v):\n%s", err, out)
		}
	})
	stop2()
}

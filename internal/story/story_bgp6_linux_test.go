//go:build linux

package story_test

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/routedlab"
	"github.com/vipstack/vipstack/internal/testutil"
)

// bgp6ClusterYAML is a dual-stack cluster of masters, each with an IPv4
// and an IPv6 session to the router, announcing the API VIPs of both
// families.
func bgp6ClusterYAML(masters int) string {
	var b strings.Builder
	b.WriteString("name: t1\nbaseDomain: example.com\n" +
		"apiVIPs: [198.19.0.5, \"fd00:99::5\"]\ningressVIPs: [198.19.0.7, \"fd00:99::7\"]\nmachineNetworks: [")
	for i := 1; i <= masters; i++ {
		if i > 1 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "198.18.%d.0/24, \"fd00:%d::/64\"", i, i)
	}
	b.WriteString("]\nnodes:\n")
	for i := 1; i <= masters; i++ {
		fmt.Fprintf(&b, "  - {name: m%d, role: master, ips: [198.18.%d.10, \"fd00:%d::10\"]}\n", i, i, i)
	}
	fmt.Fprintf(&b, "bgp:\n  asn: %d\n  announce: [api, ingress]\n  peers:\n", bgpNodeASN)
	for i := 1; i <= masters; i++ {
		for _, a := range []string{fmt.Sprintf("198.18.%d.1", i), fmt.Sprintf("\"fd00:%d::1\"", i)} {
			fmt.Fprintf(&b, "    - {address: %s, asn: %d, nodes: [m%d], holdTime: 30s, keepalive: 10s}\n", a, bgpRouterASN, i)
		}
	}
	return b.String()
}

// bgp6FRRConf peers with every master over IPv4 (IPv4 unicast) and over
// IPv6 (IPv6 unicast only), with ECMP in both families.
func bgp6FRRConf(masters int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "log stdout informational\nrouter bgp %d\n bgp router-id 198.18.100.1\n no bgp ebgp-requires-policy\n", bgpRouterASN)
	for i := 1; i <= masters; i++ {
		for _, a := range []string{fmt.Sprintf("198.18.%d.10", i), fmt.Sprintf("fd00:%d::10", i)} {
			fmt.Fprintf(&b, " neighbor %s remote-as %d\n neighbor %s timers 10 30\n neighbor %s timers connect 1\n", a, bgpNodeASN, a, a)
		}
	}
	b.WriteString(" address-family ipv4 unicast\n  maximum-paths 8\n")
	for i := 1; i <= masters; i++ {
		fmt.Fprintf(&b, "  no neighbor fd00:%d::10 activate\n", i)
	}
	b.WriteString(" exit-address-family\n address-family ipv6 unicast\n  maximum-paths 8\n")
	for i := 1; i <= masters; i++ {
		fmt.Fprintf(&b, "  neighbor fd00:%d::10 activate\n", i)
	}
	b.WriteString(" exit-address-family\n!\n")
	return b.String()
}

// TestStoryBGPIPv6 runs `vipstack node` on two dual-stack masters, each
// alone on its subnets behind FRR with an IPv4 and an IPv6 session: the
// IPv6 API VIP (fd00:99::5) is installed in FRR's IPv6 kernel table as
// ECMP over both masters' IPv6 addresses, a client reaches the API
// through it, `vipstack status` shows both sessions and the /128 route,
// and a graceful stop of one master leaves the route over the other.
func TestStoryBGPIPv6(t *testing.T) {
	routedlab.RequireFRR(t)
	const masters = 2
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	vip6, vip4 := netip.MustParseAddr("fd00:99::5"), netip.MustParseAddr(bgpAPIVIP)
	l := routedlab.New(t, routedlab.Options{Prefix: "vbn6", Nodes: masters})
	frr := l.StartFRR(t, bgp6FRRConf(masters), "")
	cfg := filepath.Join(l.Dir, "cluster.yaml")
	if err := os.WriteFile(cfg, []byte(bgp6ClusterYAML(masters)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, procs, exited := startBGPMasters(t, l, frr, bin, cfg, masters, "ipv6")

	l.WantNexthops(t, vip6, 60*time.Second, 1, 2)
	l.WantNexthops(t, vip4, 10*time.Second, 1, 2)
	get := func() (string, error) { return readyzVia(l, "[fd00:99::5]:6443") }
	testutil.Eventually(t, 15*time.Second, func() error {
		body, err := get()
		if err != nil || !strings.Contains(body, "ok from m") {
			return fmt.Errorf("client through the IPv6 API VIP: %v %q", err, body)
		}
		return nil
	})

	testutil.Eventually(t, 10*time.Second, func() error {
		s, err := nodeStatus(bin, l.Nodes[0])
		if err != nil {
			return err
		}
		if s.BGP == nil || len(s.BGP.Peers) != 2 {
			return fmt.Errorf("m1's BGP status: %+v, want two peers", s.BGP)
		}
		for _, p := range s.BGP.Peers {
			if p.Session != "established" {
				return fmt.Errorf("m1's peer %+v, want established", p)
			}
		}
		for _, r := range s.BGP.Routes {
			if r.Prefix == "fd00:99::5/128" && r.Announced {
				return nil
			}
		}
		return fmt.Errorf("m1's routes %+v: fd00:99::5/128 not announced", s.BGP.Routes)
	})
	// FRR holds the IPv6 route from both masters over their IPv6 sessions.
	out, err := frr.Vtysh("show bgp ipv6 unicast fd00:99::5/128")
	if err != nil || !strings.Contains(out, "fd00:1::10") || !strings.Contains(out, "fd00:2::10") {
		t.Errorf("bgpd's IPv6 paths to %v (%v):\n%s", vip6, err, out)
	}

	if err := syscall.Kill(procs[1].Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited[1]:
	case <-time.After(20 * time.Second):
		t.Fatal("m2's agent has not exited 20 s after SIGTERM")
	}
	l.WantNexthops(t, vip6, 2*time.Second, 1)
	l.WantNexthops(t, vip4, 2*time.Second, 1)
	// m1's load balancer (behind the VIP) spreads over both API servers,
	// m2's still running: any answer shows the VIP reached m1.
	for range 5 {
		if body, err := get(); err != nil || !strings.Contains(body, "ok from m") {
			t.Fatalf("client through the IPv6 API VIP after m2 stopped: %v %q", err, body)
		}
	}
}

//go:build linux

package story_test

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/routedlab"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestStoryBGPPlannedRestart: `vipstack node --bgp-stop-keeps-routes`
// (under its supervisor) on a master alone on its subnet behind FRR, its
// peer with graceful restart (120 s): SIGTERM leaves the route announced
// and the VIP on lo, bgpd holds the route as stale while no agent runs,
// the client still reaches the API through the VIP, and the next agent
// takes the route over; the router's kernel route to the VIP is there in
// every sample taken across the restart.
func TestStoryBGPPlannedRestart(t *testing.T) {
	routedlab.RequireFRR(t)
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	vip := netip.MustParseAddr(bgpAPIVIP)
	l := routedlab.New(t, routedlab.Options{Prefix: "vbnr", Nodes: 1})
	frr := l.StartFRR(t, fmt.Sprintf("log stdout informational\nrouter bgp %d\n bgp router-id 198.18.100.1\n no bgp ebgp-requires-policy\n"+
		" neighbor 198.18.1.10 remote-as %d\n neighbor 198.18.1.10 timers 10 30\n neighbor 198.18.1.10 timers connect 1\n!\n", bgpRouterASN, bgpNodeASN), "")
	cfg := filepath.Join(l.Dir, "cluster.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`name: t1
baseDomain: example.com
apiVIPs: [%s]
ingressVIPs: [198.19.0.7]
machineNetworks: [198.18.1.0/24]
nodes:
  - {name: m1, role: master, ips: [198.18.1.10]}
bgp:
  asn: %d
  announce: [api, ingress]
  peers:
    - {address: 198.18.1.1, asn: %d, holdTime: 30s, keepalive: 10s, gracefulRestart: 120s}
`, bgpAPIVIP, bgpNodeASN, bgpRouterASN)), 0o644); err != nil {
		t.Fatal(err)
	}
	serveTLSIn(t, l.Nodes[0], ":6443", "ok from m1")
	var logs []*syncbuf.Buffer
	start := func() (*os.Process, <-chan struct{}) {
		b := &syncbuf.Buffer{}
		logs = append(logs, b)
		c, done := routedlab.Start(t, l.Nodes[0], b, nil, bin, "node", "--config", cfg, "--node", "m1",
			"--state-dir", filepath.Join(l.Dir, "m1"), "--bgp-stop-keeps-routes")
		return c.Process, done
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, b := range logs {
				t.Logf("---- agent %d log:\n%s", i+1, testutil.Tail(b.String(), 40))
			}
			out, _ := frr.Vtysh("show bgp ipv4 unicast")
			t.Logf("---- show bgp ipv4 unicast:\n%s", out)
		}
	})
	route := func() (string, error) { return frr.Vtysh("show bgp ipv4 unicast " + bgpAPIVIP + "/32") }
	get := func() (string, error) { return readyzVia(l, bgpAPIVIP+":6443") }

	p, exited := start()
	l.WantNexthops(t, vip, 60*time.Second, 1)

	var missing, samples atomic.Int32
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			gws, err := l.Nexthops(vip)
			samples.Add(1)
			if err != nil || len(gws) == 0 {
				missing.Add(1)
			}
		}
	}()

	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the agent has not exited 20 s after SIGTERM")
	}
	if !strings.Contains(logs[0].String(), "routes left in place for graceful restart") || strings.Contains(logs[0].String(), "bgp: withdrew") {
		t.Errorf("the stopping agent's log does not say it left its routes, or says it withdrew:\n%s", testutil.Tail(logs[0].String(), 30))
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		out, err := route()
		if err != nil || !strings.Contains(strings.ToLower(out), "stale") {
			return fmt.Errorf("bgpd does not hold %s as stale while no agent runs (%v):\n%s", bgpAPIVIP, err, out)
		}
		return nil
	})
	if out, err := routedlab.Exec(l.Nodes[0], "ip", "-4", "addr", "show", "dev", "lo"); err != nil || !strings.Contains(out, bgpAPIVIP+"/32") {
		t.Errorf("m1's loopback lost the VIP while the agent restarts (%v):\n%s", err, out)
	}
	if body, err := get(); err != nil || !strings.Contains(body, "ok from m1") {
		t.Errorf("client through the VIP while no agent runs: %v %q", err, body)
	}

	_, _ = start()
	testutil.Eventually(t, 60*time.Second, func() error {
		out, err := route()
		if err != nil || strings.Contains(strings.ToLower(out), "stale") || !strings.Contains(out, "198.18.1.10") {
			return fmt.Errorf("bgpd's route to %s after the restart, want it from m1 and not stale (%v):\n%s", bgpAPIVIP, err, out)
		}
		return nil
	})
	close(stop)
	<-sampled
	t.Logf("the router's route to %v sampled %d times across the restart, missing %d", vip, samples.Load(), missing.Load())
	if missing.Load() != 0 || samples.Load() < 5 {
		t.Errorf("the router lost its route to %v in %d of %d samples during the restart", vip, missing.Load(), samples.Load())
	}
	if body, err := get(); err != nil || !strings.Contains(body, "ok from m1") {
		t.Errorf("client through the VIP after the restart: %v %q", err, body)
	}
}

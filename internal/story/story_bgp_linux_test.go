//go:build linux

package story_test

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/node"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/routedlab"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testutil"
)

// The routed lab: FRR in a router namespace, master i (1-based) alone on
// 198.18.i.0/24 at .10 with the router at .1, a client on 198.18.100.0/24.
// No layer-2 segment joins the masters: the API VIP, 198.19.0.5 outside
// every subnet, reaches them only as a BGP host route.
const (
	bgpAPIVIP    = "198.19.0.5"
	bgpRouterASN = 64500
	bgpNodeASN   = 64512
)

// bgpClusterYAML is the cluster file; extraVIP, if set, is a second API
// VIP, and hold3 the hold time of m3's peer.
func bgpClusterYAML(masters int, extraVIP, hold3 string) string {
	var b strings.Builder
	vips := bgpAPIVIP
	if extraVIP != "" {
		vips += ", " + extraVIP
	}
	b.WriteString("name: t1\nbaseDomain: example.com\napiVIPs: [" + vips + "]\ningressVIPs: [198.19.0.7]\nmachineNetworks: [")
	for i := 1; i <= masters; i++ {
		if i > 1 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "198.18.%d.0/24", i)
	}
	b.WriteString("]\nnodes:\n")
	for i := 1; i <= masters; i++ {
		fmt.Fprintf(&b, "  - {name: m%d, role: master, ips: [198.18.%d.10]}\n", i, i)
	}
	fmt.Fprintf(&b, "bgp:\n  asn: %d\n  announce: [api, ingress]\n  peers:\n", bgpNodeASN)
	for i := 1; i <= masters; i++ {
		hold := "30s"
		if i == 3 && hold3 != "" {
			hold = hold3
		}
		bfd := ""
		if i == 1 { // m1's session runs BFD with FRR's bfdd
			bfd = ", bfd: {interval: 100ms, multiplier: 3}"
		}
		fmt.Fprintf(&b, "    - {address: 198.18.%d.1, asn: %d, nodes: [m%d], holdTime: %s, keepalive: 10s%s}\n", i, bgpRouterASN, i, hold, bfd)
	}
	return b.String()
}

func bgpFRRConf(masters int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "log stdout informational\nrouter bgp %d\n bgp router-id 198.18.100.1\n no bgp ebgp-requires-policy\n", bgpRouterASN)
	for i := 1; i <= masters; i++ {
		fmt.Fprintf(&b, " neighbor 198.18.%d.10 remote-as %d\n neighbor 198.18.%d.10 timers 10 30\n neighbor 198.18.%d.10 timers connect 1\n", i, bgpNodeASN, i, i)
		if i == 1 {
			// update-source: bgpd registers the BFD session with its
			// source from the start (see internal/bgp's FRR lab).
			b.WriteString(" neighbor 198.18.1.10 update-source 198.18.1.1\n neighbor 198.18.1.10 bfd profile fast\n")
		}
	}
	b.WriteString(" address-family ipv4 unicast\n  maximum-paths 8\n exit-address-family\n!\n")
	return b.String()
}

// serveTLSIn answers HTTPS on addr in ns with body.
func serveTLSIn(t *testing.T, ns, addr, body string) {
	t.Helper()
	var ln net.Listener
	if err := routedlab.Do(ns, func() (err error) { ln, err = net.Listen("tcp", addr); return err }); err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, body)
	})}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
}

// nodeStatus reads `vipstack status -o json` in ns.
func nodeStatus(bin, ns string) (node.Status, error) {
	var s node.Status
	out, err := routedlab.Exec(ns, bin, "status", "-o", "json")
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		return s, fmt.Errorf("status JSON: %v: %q", err, out)
	}
	return s, nil
}

// TestStoryBGP runs `vipstack node` on three masters, each alone on its
// subnet behind FRR (m1's session with BFD against FRR's bfdd), with the
// API (and Ingress) VIPs announced by BGP:
// the API route is ECMP over the three, a client reaches the API through
// the VIP, a failing check on one master demotes its route (the router
// leaves it out; `vipstack status` says why), it comes back when the
// check passes, the route goes over every master again when all three
// fail the check (the last nodes keep the VIP, as with VRRP's weights),
// and a graceful stop withdraws the route before the agent exits.
// Ingress, whose check fails everywhere (no router runs), is announced
// demoted by all three.
func TestStoryBGP(t *testing.T) {
	routedlab.RequireFRR(t)
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skipf("skipping: nft is not installed (%v); .ci/run installs nftables", err)
	}
	const masters = 3
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	apiVIP, extraVIP := netip.MustParseAddr(bgpAPIVIP), netip.MustParseAddr("198.19.0.6")
	l := routedlab.New(t, routedlab.Options{Prefix: "vbg2", Nodes: masters})
	frr := l.StartFRR(t, bgpFRRConf(masters), routedlab.BFDProfileFast)
	cfg := filepath.Join(l.Dir, "cluster.yaml")
	if err := os.WriteFile(cfg, []byte(bgpClusterYAML(masters, "", "")), 0o644); err != nil {
		t.Fatal(err)
	}
	logs, procs, exited := startBGPMasters(t, l, frr, bin, cfg, masters, "ipv4")

	// Every master's checks pass (rise 3 at 2 s): the route is ECMP
	// over all three. (Starting, they announce it demoted, which is ECMP
	// over all three as well: wait for their status to say eligible.)
	allEligible := func(timeout time.Duration) {
		t.Helper()
		testutil.Eventually(t, timeout, func() error {
			for i := range masters {
				s, err := nodeStatus(bin, l.Nodes[i])
				if err != nil {
					return err
				}
				if s.BGP == nil || !slices.ContainsFunc(s.BGP.Routes, func(r node.BGPRouteStatus) bool {
					return r.Prefix == bgpAPIVIP+"/32" && r.Announced && !r.Demoted
				}) {
					return fmt.Errorf("m%d's API route: %+v, want announced, not demoted, once its checks pass", i+1, s.BGP)
				}
			}
			return nil
		})
	}
	allEligible(60 * time.Second)
	l.WantNexthops(t, apiVIP, 10*time.Second, 1, 2, 3)
	get := func() (string, error) { return readyzVia(l, bgpAPIVIP+":6443") }
	testutil.Eventually(t, 15*time.Second, func() error {
		body, err := get()
		if err != nil || !strings.Contains(body, "ok from m") {
			return fmt.Errorf("client through the API VIP: %v %q", err, body)
		}
		return nil
	})
	for range 10 {
		if body, err := get(); err != nil || !strings.Contains(body, "ok from m") {
			t.Fatalf("client through the API VIP: %v %q", err, body)
		}
	}

	// Status of m1: its peer established, the API route announced with
	// its checks, the Ingress route announced demoted for its failing
	// check.
	testutil.Eventually(t, 10*time.Second, func() error {
		s, err := nodeStatus(bin, l.Nodes[0])
		if err != nil {
			return err
		}
		if s.BGP == nil || len(s.BGP.Peers) != 1 || s.BGP.Peers[0].Session != "established" || s.BGP.Peers[0].BFD != "up" {
			return fmt.Errorf("m1's BGP status: %+v, want its one peer established, BFD up", s.BGP)
		}
		for _, r := range s.BGP.Routes {
			switch r.Prefix {
			case bgpAPIVIP + "/32":
				if !r.Announced || !strings.Contains(r.Reason, "chk_ocp_lb ok") {
					return fmt.Errorf("API route: %+v, want announced with chk_ocp_lb ok", r)
				}
			case "198.19.0.7/32":
				if !r.Announced || !r.Demoted || !strings.Contains(r.Reason, "demoted: chk_ingress failing") {
					return fmt.Errorf("Ingress route: %+v, want announced demoted, chk_ingress failing", r)
				}
			default:
				return fmt.Errorf("unexpected route %+v", r)
			}
		}
		return nil
	})
	if out, err := routedlab.Exec(l.Nodes[0], bin, "status"); err != nil || !strings.Contains(out, "route "+bgpAPIVIP+"/32 (api): announced") ||
		!strings.Contains(out, "peer 198.18.1.1 AS 64500 (eBGP): established, 2 routes sent, BFD up") ||
		!strings.Contains(out, "route 198.19.0.7/32 (ingress): announced: demoted: chk_ingress failing") {
		t.Errorf("vipstack status on m1: %v\n%s", err, out)
	}
	// Every master is demoted for Ingress: the router uses them all.
	l.WantNexthops(t, netip.MustParseAddr("198.19.0.7"), 10*time.Second, 1, 2, 3)

	// m2's load balancer stops answering its checks (its port refused on
	// loopback): m2 demotes its route, which goes over m1 and m3 only.
	block := func(ns string, on bool) {
		t.Helper()
		if on {
			for _, cmd := range [][]string{
				{"add", "table", "inet", "vbg2"},
				{"add", "chain", "inet", "vbg2", "out", "{ type filter hook output priority 0 ; }"},
				{"add", "rule", "inet", "vbg2", "out", "oifname", "lo", "tcp", "dport", "9445", "reject", "with", "tcp", "reset"},
			} {
				if out, err := routedlab.Exec(ns, append([]string{"nft"}, cmd...)...); err != nil {
					t.Fatal(err, out)
				}
			}
			return
		}
		if out, err := routedlab.Exec(ns, "nft", "delete", "table", "inet", "vbg2"); err != nil {
			t.Fatal(err, out)
		}
	}
	block(l.Nodes[1], true)
	l.WantNexthops(t, apiVIP, 20*time.Second, 1, 3)
	s, err := nodeStatus(bin, l.Nodes[1])
	if err != nil {
		t.Fatal(err)
	}
	if s.BGP == nil || !slices.ContainsFunc(s.BGP.Routes, func(r node.BGPRouteStatus) bool {
		return r.Prefix == bgpAPIVIP+"/32" && r.Announced && r.Demoted && strings.Contains(r.Reason, "demoted: chk_ocp_lb failing")
	}) {
		t.Errorf("m2's status with its LB check failing: %+v, want the API route announced demoted, chk_ocp_lb failing", s.BGP)
	}
	for range 10 {
		if body, err := get(); err != nil || !strings.Contains(body, "ok from m") {
			t.Fatalf("client through the API VIP with m2 demoted: %v %q", err, body)
		}
	}
	// m1 and m3 fail the check too: all three are demoted, and the
	// router routes the VIP over all of them rather than nowhere.
	block(l.Nodes[0], true)
	block(l.Nodes[2], true)
	l.WantNexthops(t, apiVIP, 20*time.Second, 1, 2, 3)
	testutil.Eventually(t, 10*time.Second, func() error {
		s, err := nodeStatus(bin, l.Nodes[0])
		if err != nil {
			return err
		}
		if s.BGP == nil || !slices.ContainsFunc(s.BGP.Routes, func(r node.BGPRouteStatus) bool {
			return r.Prefix == bgpAPIVIP+"/32" && r.Announced && r.Demoted
		}) {
			return fmt.Errorf("m1's status with its LB check failing: %+v, want the API route announced demoted", s.BGP)
		}
		return nil
	})
	if body, err := get(); err != nil || !strings.Contains(body, "ok from m") {
		t.Errorf("client through the API VIP with every master demoted: %v %q", err, body)
	}
	for _, i := range []int{0, 1, 2} {
		block(l.Nodes[i], false)
	}
	allEligible(30 * time.Second)
	l.WantNexthops(t, apiVIP, 10*time.Second, 1, 2, 3)

	// A reload adds an API VIP on every master and changes m3's peer: the
	// new VIP is announced by all three, m3's session restarts, and the
	// sessions of m1 and m2, whose peers did not change, stay up.
	dropped := func(i int) int {
		t.Helper()
		out, err := frr.Vtysh(fmt.Sprintf("show bgp neighbors 198.18.%d.10 json", i))
		if err != nil {
			t.Fatal(err)
		}
		var n map[string]struct {
			Dropped int `json:"connectionsDropped"`
		}
		if err := json.Unmarshal([]byte(out), &n); err != nil {
			t.Fatalf("show bgp neighbors json: %v: %q", err, out)
		}
		return n[fmt.Sprintf("198.18.%d.10", i)].Dropped
	}
	before := []int{dropped(1), dropped(2), dropped(3)}
	if err := os.WriteFile(cfg, []byte(bgpClusterYAML(masters, "198.19.0.6", "60s")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range procs {
		if err := c.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	l.WantNexthops(t, extraVIP, 30*time.Second, 1, 2, 3)
	l.WantNexthops(t, apiVIP, 30*time.Second, 1, 2, 3)
	testutil.Eventually(t, 10*time.Second, func() error {
		if got := []int{dropped(1), dropped(2), dropped(3)}; got[0] != before[0] || got[1] != before[1] || got[2] != before[2]+1 {
			return fmt.Errorf("sessions dropped by the reload (m1, m2, m3): %v before, %v after; want m3's alone", before, got)
		}
		return nil
	})
	if out, err := routedlab.Exec(l.Nodes[0], "ip", "-4", "addr", "show", "dev", "lo"); err != nil || !strings.Contains(out, "198.19.0.6/32") {
		t.Errorf("m1's loopback after the reload lacks the new VIP (%v):\n%s", err, out)
	}

	// A graceful stop of m3: its route is gone once the agent has exited
	// (the hold timer, 30 s, would take far longer).
	if err := syscall.Kill(procs[2].Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited[2]:
	case <-time.After(20 * time.Second):
		t.Fatal("m3's agent has not exited 20 s after SIGTERM")
	}
	// bgpd takes a moment to program the kernel after the UPDATE.
	l.WantNexthops(t, apiVIP, 2*time.Second, 1, 2)
	l.WantNexthops(t, extraVIP, 2*time.Second, 1, 2)
	if !strings.Contains(logs[2].String(), "bgp: withdrew") {
		t.Errorf("m3's log has no withdrawal before it exited:\n%s", testutil.Tail(logs[2].String(), 30))
	}
	if out, err := routedlab.Exec(l.Nodes[2], "ip", "-4", "addr", "show", "dev", "lo"); err != nil || strings.Contains(out, bgpAPIVIP) {
		t.Errorf("m3's loopback after the stop still holds the VIP (%v):\n%s", err, out)
	}
}

// readyzVia asks addr (a VIP:6443) for /readyz over TLS from the routed
// lab's client, behind the router, and returns what came back.
func readyzVia(l *routedlab.Lab, addr string) (string, error) {
	var body string
	err := routedlab.Do(l.Client, func() error {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return err
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
		fmt.Fprintf(conn, "GET /readyz HTTP/1.0\r\n\r\n")
		b, err := io.ReadAll(conn)
		body = string(b)
		return err
	})
	return body, err
}

// startBGPMasters starts `vipstack node` as masters m1..mN of the cluster
// file cfg in the lab's nodes, each with a TLS API answering "ok from
// mI"; on failure the test log gets their last lines and FRR's table of
// family (ipv4, ipv6).
func startBGPMasters(t *testing.T, l *routedlab.Lab, frr *routedlab.FRR, bin, cfg string, masters int, family string) (logs []*syncbuf.Buffer, procs []*exec.Cmd, exited []<-chan struct{}) {
	t.Helper()
	logs = make([]*syncbuf.Buffer, masters)
	procs = make([]*exec.Cmd, masters)
	exited = make([]<-chan struct{}, masters)
	for i := range masters {
		ns := l.Nodes[i]
		serveTLSIn(t, ns, ":6443", fmt.Sprintf("ok from m%d", i+1))
		logs[i] = &syncbuf.Buffer{}
		procs[i], exited[i] = routedlab.Start(t, ns, logs[i], nil, bin, "node", "--config", cfg, "--node", fmt.Sprintf("m%d", i+1),
			"--state-dir", filepath.Join(l.Dir, fmt.Sprintf("m%d", i+1)), "--log-level", "debug")
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, b := range logs {
				t.Logf("---- m%d log:\n%s", i+1, testutil.Tail(b.String(), 60))
			}
			out, _ := frr.Vtysh("show bgp " + family + " unicast")
			t.Logf("---- show bgp %s unicast:\n%s", family, out)
		}
	})
	return logs, procs, exited
}

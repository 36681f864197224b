package clusterstatus_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/clusterstatus"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/routedlab"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestBGPView runs `vipstack node` on two masters, each alone on its
// subnet behind FRR (internal/routedlab, as TestStoryBGP), announcing the
// API and Ingress VIPs by BGP, and `vipstack status --cluster` on m1: the
// API VIP is announced by both (their load balancers' backend is up), the
// Ingress VIP by both demoted (its check fails: no router; the default
// bgp.onCheckFailure demotes), exit 1; once m2 is killed, both VIPs are
// announced by m1 alone and m2 is unreachable.
func TestBGPView(t *testing.T) {
	routedlab.RequireFRR(t)
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l := routedlab.New(t, routedlab.Options{Prefix: "vbgo", Nodes: 2})
	frr := l.StartFRR(t, `log stdout informational
router bgp 64500
 bgp router-id 198.18.100.1
 no bgp ebgp-requires-policy
 neighbor 198.18.1.10 remote-as 64512
 neighbor 198.18.1.10 timers connect 1
 neighbor 198.18.2.10 remote-as 64512
 neighbor 198.18.2.10 timers connect 1
 address-family ipv4 unicast
  maximum-paths 8
 exit-address-family
!
`, "")
	cfg := filepath.Join(l.Dir, "cluster.yaml")
	if err := os.WriteFile(cfg, []byte(`name: t1
baseDomain: example.com
apiVIPs: [198.19.0.5]
ingressVIPs: [198.19.0.7]
machineNetworks: [198.18.1.0/24, 198.18.2.0/24]
ports: {status: 9652}
nodes:
  - {name: m1, role: master, ips: [198.18.1.10]}
  - {name: m2, role: master, ips: [198.18.2.10]}
bgp:
  asn: 64512
  announce: [api, ingress]
  peers:
    - {address: 198.18.1.1, asn: 64500, nodes: [m1]}
    - {address: 198.18.2.1, asn: 64500, nodes: [m2]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := make([]*syncbuf.Buffer, 2)
	procs := make([]*exec.Cmd, 2)
	exited := make([]<-chan struct{}, 2)
	for i, ns := range l.Nodes {
		// The API server the load balancer's backend check finds up.
		var ln net.Listener
		if err := routedlab.Do(ns, func() (err error) { ln, err = net.Listen("tcp", ":6443"); return err }); err != nil {
			t.Fatal(err)
		}
		api := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, "ok")
		})}}
		api.StartTLS()
		t.Cleanup(api.Close)
		logs[i] = &syncbuf.Buffer{}
		name := fmt.Sprintf("m%d", i+1)
		procs[i], exited[i] = routedlab.Start(t, ns, logs[i], nil, bin, "node", "--config", cfg, "--node", name,
			"--state-dir", filepath.Join(l.Dir, name), "--no-supervisor", "--watch-interval", "0")
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, b := range logs {
				t.Logf("---- m%d log:\n%s", i+1, testutil.Tail(b.String(), 40))
			}
			out, _ := frr.Vtysh("show bgp summary")
			t.Logf("---- show bgp summary:\n%s", out)
		}
	})
	view := func() (clusterstatus.View, int, error) {
		var v clusterstatus.View
		c := exec.Command("ip", "netns", "exec", l.Nodes[0], bin, "status", "--cluster", "--config", cfg, "-o", "json")
		out, err := c.Output()
		code := c.ProcessState.ExitCode()
		if jerr := json.Unmarshal(out, &v); jerr != nil {
			return v, code, fmt.Errorf("status --cluster (exit %d, %v): %v: %q", code, err, jerr, out)
		}
		return v, code, nil
	}
	// announcers maps each BGP VIP to its announcers and each member's
	// route.
	announcers := func(v clusterstatus.View) map[string][]string {
		out := map[string][]string{}
		for _, x := range v.BGP {
			out[x.Address] = append([]string{}, x.Announcers...)
			for _, m := range x.Members {
				out[x.Address+" members"] = append(out[x.Address+" members"], m.Node+" "+m.Route)
			}
		}
		return out
	}
	want := func(code int, w map[string][]string) {
		t.Helper()
		testutil.Eventually(t, 60*time.Second, func() error {
			v, c, err := view()
			if err != nil {
				return err
			}
			if got := announcers(v); c != code || fmt.Sprint(got) != fmt.Sprint(w) {
				return fmt.Errorf("exit %d, BGP VIPs %v; want exit %d, %v (problems %q)", c, got, code, w, v.Problems)
			}
			if len(v.VIPs) != 0 {
				return fmt.Errorf("VRRP VIPs %+v, want none", v.VIPs)
			}
			return nil
		})
	}
	want(1, map[string][]string{
		"198.19.0.5": {"m1", "m2"}, "198.19.0.5 members": {"m1 announced", "m2 announced"},
		"198.19.0.7": {"m1", "m2"}, "198.19.0.7 members": {"m1 demoted", "m2 demoted"},
	})
	if err := syscall.Kill(-procs[1].Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited[1]
	want(1, map[string][]string{
		"198.19.0.5": {"m1"}, "198.19.0.5 members": {"m1 announced", "m2 unreachable"},
		"198.19.0.7": {"m1"}, "198.19.0.7 members": {"m1 demoted", "m2 unreachable"},
	})
}

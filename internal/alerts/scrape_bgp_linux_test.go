package alerts_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/alerts"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/routedlab"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestRulesBGPMetricsLive runs `vipstack node` as the one master of a
// cluster file that announces its API and Ingress VIPs by BGP, alone on
// its subnet behind FRR (the session with BFD against FRR's bfdd), as in
// internal/story's TestStoryBGP, and scrapes its /metrics: every
// vipstack_bgp_ series the rules or the dashboard name is there, the
// session and BFD are reported up once FRR has them up, the API VIP (its
// backend up) is announced and counted, the Ingress VIP (its check
// failing) is not.
func TestRulesBGPMetricsLive(t *testing.T) {
	routedlab.RequireFRR(t)
	h, _, root := tools(t)
	named, panels := namedMetrics(t, h, root)
	var want []string
	for m := range named {
		if strings.HasPrefix(m, bgpPrefix) {
			want = append(want, m)
		}
	}
	sort.Strings(want)
	if len(want) == 0 {
		t.Fatal("the rules and the dashboard name no vipstack_bgp_ series; nothing to check")
	}
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l := routedlab.New(t, routedlab.Options{Prefix: "vbgo", Nodes: 1})
	frr := l.StartFRR(t, `log stdout informational
router bgp 64500
 bgp router-id 198.18.100.1
 no bgp ebgp-requires-policy
 neighbor 198.18.1.10 remote-as 64512
 neighbor 198.18.1.10 timers 10 30
 neighbor 198.18.1.10 timers connect 1
 neighbor 198.18.1.10 update-source 198.18.1.1
 neighbor 198.18.1.10 bfd profile fast
!
`, routedlab.BFDProfileFast)
	cfg := filepath.Join(l.Dir, "cluster.yaml")
	if err := os.WriteFile(cfg, []byte(`name: t1
baseDomain: example.com
apiVIPs: [198.19.0.5]
ingressVIPs: [198.19.0.7]
machineNetworks: [198.18.1.0/24]
nodes:
  - {name: m1, role: master, ips: [198.18.1.10]}
bgp:
  asn: 64512
  announce: [api, ingress]
  peers:
    - {address: 198.18.1.1, asn: 64500, nodes: [m1], holdTime: 30s, keepalive: 10s, bfd: {interval: 100ms, multiplier: 3}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	// The API server the load balancer's backend check finds up, so the
	// API VIP is announced (the Ingress VIP's check fails: no router, so
	// its route is announced demoted).
	var ln net.Listener
	if err := routedlab.Do(l.Nodes[0], func() (err error) { ln, err = net.Listen("tcp", ":6443"); return err }); err != nil {
		t.Fatal(err)
	}
	api := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok")
	})}}
	api.StartTLS()
	t.Cleanup(api.Close)
	const metricsAddr = "127.0.0.1:9650"
	log := &syncbuf.Buffer{}
	routedlab.Start(t, l.Nodes[0], log, nil, bin, "node", "--config", cfg, "--node", "m1",
		"--state-dir", filepath.Join(l.Dir, "m1"), "--no-supervisor", "--watch-interval", "0", "--metrics-addr", metricsAddr)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- vipstack node, last lines:\n%s", testutil.Tail(log.String(), 40))
			out, _ := frr.Vtysh("show bgp summary")
			t.Logf("---- show bgp summary:\n%s", out)
		}
	})
	do := func(f func() error) error { return routedlab.Do(l.Nodes[0], f) }
	var samples []sample
	value := func(name, labels string) string {
		for _, s := range samples {
			if s.name == name && s.labels == labels {
				return s.value
			}
		}
		return ""
	}
	err = testutil.Poll(60*time.Second, func() error {
		text, err := scrapeIn(do, metricsAddr)
		if err != nil {
			return err
		}
		if samples, err = parseExposition(text); err != nil {
			return err
		}
		var missing []string
		for _, m := range want {
			if !slices.ContainsFunc(samples, func(s sample) bool { return s.name == m }) {
				missing = append(missing, m+" (named by "+strings.Join(named[m], ", ")+")")
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("not in the scrape: %v", missing)
		}
		if v := value("vipstack_bgp_session_up", `{peer="198.18.1.1",peer_asn="64500"}`); v != "1" {
			return fmt.Errorf("vipstack_bgp_session_up of 198.18.1.1 is %q, want 1", v)
		}
		if v := value("vipstack_bgp_bfd_up", `{peer="198.18.1.1"}`); v != "1" {
			return fmt.Errorf("vipstack_bgp_bfd_up of 198.18.1.1 is %q, want 1", v)
		}
		if v := value("vipstack_bgp_vip_announced", `{role="api",vip="198.19.0.5"}`); v != "1" {
			return fmt.Errorf("vipstack_bgp_vip_announced of the API VIP is %q, want 1", v)
		}
		if v := value("vipstack_bgp_vip_demoted", `{role="api",vip="198.19.0.5"}`); v != "0" {
			return fmt.Errorf("vipstack_bgp_vip_demoted of the API VIP is %q, want 0 (its checks pass)", v)
		}
		if v := value("vipstack_bgp_vip_announced", `{role="ingress",vip="198.19.0.7"}`); v != "1" {
			return fmt.Errorf("vipstack_bgp_vip_announced of the Ingress VIP is %q, want 1 (demoted)", v)
		}
		if v := value("vipstack_bgp_vip_demoted", `{role="ingress",vip="198.19.0.7"}`); v != "1" {
			return fmt.Errorf("vipstack_bgp_vip_demoted of the Ingress VIP is %q, want 1 (its check fails)", v)
		}
		if v := value("vipstack_bgp_routes_advertised", `{peer="198.18.1.1"}`); v != "2" {
			return fmt.Errorf("vipstack_bgp_routes_advertised of 198.18.1.1 is %q, want 2 (the API VIP's route and the Ingress VIP's, demoted)", v)
		}
		// The API route is announced demoted while its checks rise, then
		// again with its own attributes; the Ingress route once.
		if v := value("vipstack_bgp_route_announcements_total", ""); v != "3" {
			return fmt.Errorf("vipstack_bgp_route_announcements_total is %q, want 3", v)
		}
		if v := value("vipstack_bgp_updates_sent_total", `{peer="198.18.1.1"}`); v == "" || v == "0" {
			return fmt.Errorf("vipstack_bgp_updates_sent_total of 198.18.1.1 is %q, want at least 1", v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, s := range samples {
		if strings.HasPrefix(s.name, bgpPrefix) {
			seen = append(seen, s.name+s.labels+" "+s.value)
			// Every BGP series the node exports has a panel or a rule.
			if _, ok := named[s.name]; !ok {
				t.Errorf("%s is exported by vipstack node but no dashboard panel or rule names it", s.name)
			}
		}
	}
	t.Logf("vipstack node's BGP series:\n%s", strings.Join(seen, "\n"))

	// The BGP panels, evaluated by promtool on this scrape as Markdown
	// tables (docs/operate.md).
	out := os.Getenv("VIPSTACK_DASHBOARD_OUT")
	if out == "" || t.Failed() {
		return
	}
	_, promtool, _ := tools(t)
	var b strings.Builder
	for _, p := range panels {
		for _, e := range p.Exprs {
			if !slices.ContainsFunc(alerts.MetricNames(e), func(m string) bool { return strings.HasPrefix(m, bgpPrefix) }) {
				continue
			}
			res, err := evaluate(t, promtool, samples, "m1", strings.ReplaceAll(e, "$namespace", ".*"))
			if err != nil {
				t.Fatalf("panel %s: %v", p.Title, err)
			}
			fmt.Fprintf(&b, "#### %s\n\n%s\n\n    %s\n\n%s\n", p.Title, p.Description, e, res.markdown())
		}
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

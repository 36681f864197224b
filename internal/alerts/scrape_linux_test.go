package alerts_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/alerts"
	"github.com/vipstack/vipstack/internal/chart"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// kubernetesOnly are the series only the Kubernetes agent and controller
// export; the live daemon of TestDashboardAndRulesMetricsLive is `vipstack
// node`, which exports none of them. TestDashboardAndRulesMetricsLiveKubernetes
// scrapes them from a running controller and agents.
var kubernetesOnly = map[string]string{
	"vipstack_agent_announced":       "agent",
	"vipstack_agent_plan_warnings":   "agent",
	"vipstack_agent_reloads_total":   "agent",
	"vipstack_k8s_pool_addresses":    "controller",
	"vipstack_k8s_pool_assigned":     "controller",
	"vipstack_k8s_pool_stale":        "controller",
	"vipstack_k8s_allocations_total": "controller",
}

// eventCounters are labelled counters whose series a daemon exports only
// from their first event (client_golang exports no child of a vector
// before it is used): a healthy scrape lacks them. They must be in
// docs/metrics.md's VRRP section instead, and the alerts on them count
// the series' appearance (tested in testdata/rules_test.yaml).
// TestDashboardAndRulesMetricsLiveKubernetes provokes both events (a VRID
// conflict, sends refused by nftables) and scrapes the two live.
var eventCounters = map[string]string{
	"vipstack_vrrp_advert_send_errors_total": "VRRP instances",
	"vipstack_vrrp_vrid_conflicts_total":     "VRRP instances",
}

// bgpPrefix starts the series only a node that announces VIPs by BGP
// exports; TestRulesBGPMetricsLive scrapes them from one.
const bgpPrefix = "vipstack_bgp_"

// TestDashboardAndRulesMetricsLive runs `vipstack node` as the only
// master of a cluster file in a network namespace (it holds the API and
// ingress VIPs, runs the API load balancer, the cluster DNS and the
// ingress check) and scrapes its /metrics: every vipstack_ series that a
// dashboard panel's query or an alert's expression names is in the scrape,
// except the Kubernetes agent's and controller's (scraped by
// TestDashboardAndRulesMetricsLiveKubernetes), the BGP speaker's (scraped
// by TestRulesBGPMetricsLive) and the event counters,
// which must be in docs/metrics.md's VRRP section. With VIPSTACK_DASHBOARD_OUT set, it
// writes each panel's query evaluated by promtool on the scrape (as
// Prometheus with the chart's PodMonitor would store it: namespace and
// node labels added) as Markdown tables to that file.
func TestDashboardAndRulesMetricsLive(t *testing.T) {
	testnet.RequireRoot(t)
	h, promtool, root := tools(t)
	named, panels := namedMetrics(t, h, root)

	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "val"})
	host := topo.Hosts[0]
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`name: lab
baseDomain: example.com
apiVIPs: [198.18.0.5]
ingressVIPs: [198.18.0.7]
machineNetworks: [198.18.0.0/24]
vrrp:
  unicast: false
nodes:
  - {name: master-0, role: master, ips: [%s]}
  - {name: master-1, role: master, ips: [198.18.0.99]}
`, host.IPv4.Addr())), 0o600); err != nil {
		t.Fatal(err)
	}
	const metricsAddr = "127.0.0.1:9650"
	n, err := peers.StartCmd(host, host.Command(bin, "node", "--config", cfg, "--node", "master-0",
		"--state-dir", filepath.Join(dir, "state"), "--no-supervisor", "--watch-interval", "0",
		"--metrics-addr", metricsAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = n.Kill()
		if t.Failed() {
			t.Logf("---- vipstack node, last lines:\n%s", testutil.Tail(n.Log(), 40))
		}
	})
	var samples []sample
	live := func() []string {
		var out []string
		for m := range named {
			if kubernetesOnly[m] == "" && eventCounters[m] == "" && !strings.HasPrefix(m, bgpPrefix) && !slices.ContainsFunc(samples, func(s sample) bool { return s.name == m }) {
				out = append(out, m)
			}
		}
		sort.Strings(out)
		return out
	}
	// Wait for the node to hold its VIPs and every series to appear.
	err = testutil.Poll(30*time.Second, func() error {
		text, err := scrape(host, metricsAddr)
		if err != nil {
			return err
		}
		if samples, err = parseExposition(text); err != nil {
			return err
		}
		held := 0
		for _, s := range samples {
			if s.name == "vipstack_vrrp_vip_held" && s.value == "1" {
				held++
			}
		}
		if held < 2 {
			return fmt.Errorf("%d VIPs held, want the API's and the ingress's", held)
		}
		if missing := live(); len(missing) > 0 {
			return fmt.Errorf("not in the scrape: %v", missing)
		}
		return nil
	})
	if err != nil {
		for _, m := range live() {
			t.Errorf("%s (named by %s) is not in vipstack node's scrape", m, strings.Join(named[m], ", "))
		}
		t.Fatal(err)
	}
	metricsDoc, err := os.ReadFile(filepath.Join(root, "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	for m, section := range eventCounters {
		if _, ok := named[m]; !ok {
			continue
		}
		_, sec, _ := strings.Cut(string(metricsDoc), "\n## "+section+"\n")
		sec, _, _ = strings.Cut(sec, "\n## ")
		if !strings.Contains(sec, "`"+m+"{") && !strings.Contains(sec, "`"+m+"`") {
			t.Errorf("%s (named by %s) is not in docs/metrics.md's %s section", m, strings.Join(named[m], ", "), section)
		}
	}
	var names []string
	for m := range named {
		names = append(names, m)
	}
	sort.Strings(names)
	t.Logf("named by the dashboard and the rules: %s", strings.Join(names, " "))

	out := os.Getenv("VIPSTACK_DASHBOARD_OUT")
	if out == "" {
		return
	}
	var b strings.Builder
	for _, p := range panels {
		for _, e := range p.Exprs {
			// The BGP panels are TestRulesBGPMetricsLive's.
			if slices.ContainsFunc(alerts.MetricNames(e), func(m string) bool { return strings.HasPrefix(m, bgpPrefix) }) {
				continue
			}
			res, err := evaluate(t, promtool, samples, "master-0", strings.ReplaceAll(e, "$namespace", ".*"))
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

// namedMetrics returns every vipstack_ metric a dashboard panel's query
// or an alert's expression names, with who names it, and the panels.
func namedMetrics(t *testing.T, h chart.Helm, root string) (map[string][]string, []alerts.Panel) {
	t.Helper()
	dash, err := os.ReadFile(filepath.Join(root, "charts", "vipstack", "dashboards", "vipstack.json"))
	if err != nil {
		t.Fatal(err)
	}
	panels, err := alerts.DashboardPanels(dash)
	if err != nil {
		t.Fatalf("dashboards/vipstack.json: %v", err)
	}
	rf := chartRules(t, h)
	named := map[string][]string{} // metric -> who names it
	for _, p := range panels {
		for _, e := range p.Exprs {
			for _, n := range alerts.MetricNames(e) {
				named[n] = append(named[n], "panel "+p.Title)
			}
		}
	}
	for _, r := range rf.Alerts() {
		for _, n := range alerts.MetricNames(r.Expr) {
			named[n] = append(named[n], "alert "+r.Alert)
		}
	}
	if len(named) == 0 {
		t.Fatal("no vipstack_ metric named by the dashboard or the rules")
	}

	return named, panels
}

// scrape GETs /metrics at addr inside host's namespace.
func scrape(h *testnet.Host, addr string) (string, error) { return scrapeIn(h.Do, addr) }

// scrapeIn GETs /metrics at addr, dialling inside do (which runs its
// function in a namespace).
func scrapeIn(do func(func() error) error, addr string) (string, error) {
	var conn net.Conn
	if err := do(func() error {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		conn = c
		return err
	}); err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return "", err
	}
	if _, err := fmt.Fprintf(conn, "GET /metrics HTTP/1.0\r\nHost: %s\r\n\r\n", addr); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		return "", err
	}
	head, body, ok := strings.Cut(string(b), "\r\n\r\n")
	if !ok || !strings.Contains(strings.SplitN(head, "\r\n", 2)[0], " 200 ") {
		return "", fmt.Errorf("GET /metrics: %.80q", b)
	}
	return body, nil
}

// sample is one line of the text exposition format.
type sample struct {
	node   string // the node label Prometheus adds; "": evaluate's
	name   string // the metric name
	labels string // the label set as written, with its braces, or ""
	value  string
}

func parseExposition(text string) ([]sample, error) {
	var out []sample
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("exposition line %q has no value", line)
		}
		series, value := line[:i], line[i+1:]
		name, labels := series, ""
		if j := strings.IndexByte(series, '{'); j >= 0 {
			name, labels = series[:j], series[j:]
		}
		out = append(out, sample{name: name, labels: labels, value: value})
	}
	return out, sc.Err()
}

package alerts_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/vipstack/vipstack/internal/alerts"
	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/k8s/k8slab"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
	"github.com/vipstack/vipstack/internal/vrrp"
	"github.com/vipstack/vipstack/internal/vrrpflood"
)

// TestDashboardAndRulesMetricsLiveKubernetes runs the Kubernetes
// controller and two agents against a real API server (internal/k8s/k8slab:
// nodes in network namespaces, an IPPool, a VIPGroup and a LoadBalancer
// Service), both serving their metrics as the chart runs them (HTTPS,
// --metrics-auth kubernetes, deploy/rbac.yaml's roles), and scrapes the
// controller's and each agent's /metrics as the chart's ServiceMonitor
// does (https, a Prometheus ServiceAccount's bearer token): every
// metric kubernetesOnly lists is named by the dashboard or the rules
// (else the list is stale) and is in the scrapes of the component it
// names (the union of its instances', as Prometheus holds them);
// the agents also export every VRRP and check series the rules and panels
// name that `vipstack node` does, and vipstack_vrrp_vrid_conflicts_total
// once a router in n2's namespace advertises a group VRID in the other
// VRRP version, and vipstack_vrrp_advert_send_errors_total once nftables
// in n1's namespace drops n1's outgoing VRRP packets. With VIPSTACK_DASHBOARD_OUT set, it
// writes the panels on the Kubernetes series, evaluated by promtool on
// these scrapes, as Markdown tables to that file.
func TestDashboardAndRulesMetricsLiveKubernetes(t *testing.T) {
	testnet.RequireRoot(t)
	h, _, root := tools(t)
	named, panels := namedMetrics(t, h, root)
	for m := range kubernetesOnly {
		if _, ok := named[m]; !ok {
			t.Errorf("kubernetesOnly lists %s, which no panel or alert names", m)
		}
	}
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctlAddr := ln.Addr().String()
	ln.Close()
	ctx := t.Context()
	// Both serve their metrics as the chart runs them: HTTPS, behind the
	// API server's TokenReview and SubjectAccessReview, each as its
	// ServiceAccount with deploy/rbac.yaml's roles.
	l := k8slab.Start(ctx, t, k8slab.Options{Nodes: 2, Prefix: "vops", Bin: bin, Advert: 200 * time.Millisecond, Services: 1,
		ControllerArgs: []string{"--metrics-addr", ctlAddr, "--metrics-auth", "kubernetes"},
		AgentArgs:      []string{"--metrics-auth", "kubernetes"}})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- controller log (tail):\n%s", testutil.Tail(l.ControllerLog(), 30))
			for _, n := range l.Nodes {
				t.Logf("---- agent %s log (tail):\n%s", n.Name, testutil.Tail(n.Log(), 30))
			}
		}
	})
	// The agents' series that `vipstack node` exports too: the VRRP,
	// check and build series the rules and panels name.
	shared := func(m string) bool {
		return strings.HasPrefix(m, "vipstack_vrrp_") || strings.HasPrefix(m, "vipstack_check_")
	}
	want := map[string][]string{} // component -> names
	for m := range named {
		switch {
		case kubernetesOnly[m] != "":
			want[kubernetesOnly[m]] = append(want[kubernetesOnly[m]], m)
		case shared(m) && eventCounters[m] == "":
			want["agent"] = append(want["agent"], m)
		}
	}
	// A VRID conflict, live: another router (the flooder, from n2's
	// namespace with n2's address) advertises a group instance's VRID in
	// the other VRRP version, so both agents count
	// vipstack_vrrp_vrid_conflicts_total.
	if _, ok := named[conflictsTotal]; ok {
		if err := advertiseConflict(ctx, l); err != nil {
			t.Fatal(err)
		}
		want["agent"] = append(want["agent"], conflictsTotal)
	}
	// A failed send, live: nftables in n1's namespace drops its outgoing
	// VRRP packets, so the kernel refuses each advertisement n1 sends as
	// master of its own instance (EPERM), and n1 counts
	// vipstack_vrrp_advert_send_errors_total. Last, as it takes n1 out.
	if _, ok := named[sendErrorsTotal]; ok {
		h := l.Nodes[0].Host
		for _, args := range [][]string{
			{"add", "table", "ip", "vopsdrop"},
			{"add", "chain", "ip", "vopsdrop", "out", "{ type filter hook output priority 0 ; }"},
			{"add", "rule", "ip", "vopsdrop", "out", "ip", "protocol", "112", "drop"},
		} {
			if _, err := h.Run("nft", args...); err != nil {
				t.Fatal(err)
			}
		}
		want["agent"] = append(want["agent"], sendErrorsTotal)
	}
	for _, names := range want {
		sort.Strings(names)
	}
	missing := func(samples []sample, names []string) []string {
		var out []string
		for _, m := range names {
			if !slices.ContainsFunc(samples, func(s sample) bool { return s.name == m }) {
				out = append(out, m)
			}
		}
		return out
	}
	token := prometheusToken(t, l)
	// A component's series as Prometheus holds them: the union of the
	// scrapes of its instances (only the node that announces a Service
	// exports vipstack_agent_announced for it).
	type target struct {
		node string
		get  func() (string, error)
	}
	scrapers := map[string][]target{"controller": {{get: func() (string, error) { return scrapeTLS(nil, ctlAddr, token) }}}}
	for _, n := range l.Nodes {
		scrapers["agent"] = append(scrapers["agent"], target{node: n.Name, get: func() (string, error) { return scrapeTLS(n.Host, "127.0.0.1:9654", token) }})
	}
	live := map[string][]sample{}
	var seen []string
	for component, gets := range scrapers {
		var left []string
		err := testutil.Poll(60*time.Second, func() error {
			var samples []sample
			for _, tg := range gets {
				text, err := tg.get()
				if err != nil {
					return err
				}
				ss, err := parseExposition(text)
				if err != nil {
					return err
				}
				for i := range ss {
					ss[i].node = tg.node
				}
				samples = append(samples, ss...)
			}
			live[component] = samples
			// The monitors scrape with honorLabels: a series' own label
			// named as a target label would replace the target's, and
			// the rules and panels select the release by namespace.
			for _, sm := range samples {
				for _, l := range []string{"namespace", "pod", "job", "container"} {
					if strings.Contains(sm.labels, "{"+l+`="`) || strings.Contains(sm.labels, ","+l+`="`) {
						return fmt.Errorf("%s%s carries the target label %q, which honorLabels would let replace the target's", sm.name, sm.labels, l)
					}
				}
			}
			if left = missing(samples, want[component]); len(left) > 0 {
				return fmt.Errorf("not in the scrapes: %v", left)
			}
			if slices.Contains(want[component], conflictsTotal) && !slices.ContainsFunc(samples, func(sm sample) bool {
				return sm.name == conflictsTotal && strings.Contains(sm.labels, `kind="version"`)
			}) {
				return fmt.Errorf("%s counts no version conflict", conflictsTotal)
			}
			return nil
		})
		if err != nil {
			for _, m := range left {
				t.Errorf("%s (named by %s) is not in the scrapes of the %s", m, strings.Join(named[m], ", "), component)
			}
			t.Errorf("%s: %v", component, err)
			continue
		}
		seen = append(seen, fmt.Sprintf("%s (%d scraped): %s", component, len(gets), strings.Join(want[component], " ")))
	}
	sort.Strings(seen)
	t.Logf("scraped live:\n%s", strings.Join(seen, "\n"))

	// The panels on the Kubernetes series, evaluated by promtool on these
	// scrapes as Markdown tables (docs/operate.md).
	out := os.Getenv("VIPSTACK_DASHBOARD_OUT")
	if out == "" || t.Failed() {
		return
	}
	_, promtool, _ := tools(t)
	samples := append(live["agent"], live["controller"]...)
	var b strings.Builder
	for _, p := range panels {
		for _, e := range p.Exprs {
			if !slices.ContainsFunc(alerts.MetricNames(e), func(m string) bool { return kubernetesOnly[m] != "" }) {
				continue
			}
			res, err := evaluate(t, promtool, samples, "", strings.ReplaceAll(e, "$namespace", ".*"))
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

const (
	conflictsTotal  = "vipstack_vrrp_vrid_conflicts_total"
	sendErrorsTotal = "vipstack_vrrp_advert_send_errors_total"
)

// advertiseConflict sends, from the second node's namespace and address,
// advertisements on the VRID of an instance of the first node's that
// carries addresses, in the VRRP version it does not run (a version
// conflict), to the VRRP group and to the first node's address.
func advertiseConflict(ctx context.Context, l *k8slab.Lab) error {
	st, err := l.Nodes[0].Status(ctx)
	if err != nil {
		return err
	}
	var in *engine.InstanceStatus
	for i := range st.Instances {
		if len(st.Instances[i].VIPs) > 0 {
			in = &st.Instances[i]
			break
		}
	}
	if in == nil {
		return fmt.Errorf("%s runs no instance with addresses: %+v", l.Nodes[0].Name, st.Instances)
	}
	version := 2
	if in.Version == 2 {
		version = 3
	}
	f, err := vrrpflood.NewFlooder(l.Nodes[1].Host)
	if err != nil {
		return err
	}
	defer f.Close()
	build := func(_ *rand.Rand, self, dst netip.Addr) (netip.Addr, []byte) {
		a := vrrp.Advertisement{Version: version, VRID: in.VRID, Priority: 100, Interval: time.Second, Addresses: []netip.Addr{netip.MustParseAddr("198.18.0.250")}}
		b, err := a.Marshal(self, dst)
		if err != nil {
			panic(err) // a bug in this test
		}
		return self, b
	}
	classes := []vrrpflood.Class{{Name: "version conflict", TTL: 255, Build: build}, {Name: "version conflict (unicast)", Unicast: true, TTL: 255, Build: build}}
	if res := f.Flood(classes, l.Nodes[0].Host.IPv4.Addr(), 10, 20, 5*time.Second, 1); res.Errors == res.Total {
		return fmt.Errorf("no conflicting advertisement could be sent: %+v", res)
	}
	return nil
}

// prometheusToken makes a ServiceAccount monitoring/prometheus bound to
// the chart's ClusterRole vipstack-metrics-reader (as the chart's
// monitoring.prometheusServiceAccount does) and returns a token of it.
func prometheusToken(t *testing.T, l *k8slab.Lab) string {
	t.Helper()
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(l.Env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts("monitoring").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "prometheus"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "vipstack-metrics-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "vipstack-metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: "monitoring"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts("monitoring").CreateToken(ctx, "prometheus", &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// scrapeTLS GETs https://addr/metrics with a bearer token, inside h's
// namespace (nil: this one), accepting the self-signed certificate as the
// chart's monitors do (tlsConfig insecureSkipVerify).
func scrapeTLS(h *testnet.Host, addr, token string) (string, error) {
	var conn net.Conn
	dial := func() error {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		conn = c
		return err
	}
	var err error
	if h != nil {
		err = h.Do(dial)
	} else {
		err = dial()
	}
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return "", err
	}
	tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true})
	if _, err := fmt.Fprintf(tc, "GET /metrics HTTP/1.0\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", addr, token); err != nil {
		return "", err
	}
	b, err := io.ReadAll(tc)
	if err != nil {
		return "", err
	}
	head, body, ok := strings.Cut(string(b), "\r\n\r\n")
	if !ok || !strings.Contains(strings.SplitN(head, "\r\n", 2)[0], " 200 ") {
		return "", fmt.Errorf("GET https://%s/metrics: %.120q", addr, b)
	}
	return body, nil
}

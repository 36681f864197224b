package alerts_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/k8s/k8slab"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestDashboardAndRulesMetricsLiveKubernetes runs the Kubernetes
// controller and two agents against a real API server (internal/k8s/k8slab:
// nodes in network namespaces, an IPPool, a VIPGroup and a LoadBalancer
// Service) and scrapes the controller's and each agent's /metrics: every
// metric kubernetesOnly lists is named by the dashboard or the rules
// (else the list is stale) and is in the scrapes of the component it
// names (the union of its instances', as Prometheus holds them);
// the agents also export every VRRP and check series the rules and panels
// name that `vipstack node` does.
func TestDashboardAndRulesMetricsLiveKubernetes(t *testing.T) {
	testnet.RequireRoot(t)
	h, _, root := tools(t)
	named, _ := namedMetrics(t, h, root)
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
	l := k8slab.Start(ctx, t, k8slab.Options{Nodes: 2, Prefix: "vops", Bin: bin, Advert: 200 * time.Millisecond, Services: 1,
		ControllerArgs: []string{"--metrics-addr", ctlAddr}})
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
	getController := func() (string, error) {
		c := &http.Client{Timeout: 10 * time.Second}
		resp, err := c.Get("http://" + ctlAddr + "/metrics")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return "", fmt.Errorf("GET /metrics: %s", resp.Status)
		}
		return string(b), err
	}
	// A component's series as Prometheus holds them: the union of the
	// scrapes of its instances (only the node that announces a Service
	// exports vipstack_agent_announced for it).
	scrapers := map[string][]func() (string, error){"controller": {getController}}
	for _, n := range l.Nodes {
		scrapers["agent"] = append(scrapers["agent"], func() (string, error) { return scrape(n.Host, "127.0.0.1:9654") })
	}
	var seen []string
	for component, gets := range scrapers {
		var left []string
		err := testutil.Poll(60*time.Second, func() error {
			var samples []sample
			for _, get := range gets {
				text, err := get()
				if err != nil {
					return err
				}
				ss, err := parseExposition(text)
				if err != nil {
					return err
				}
				samples = append(samples, ss...)
			}
			if left = missing(samples, want[component]); len(left) > 0 {
				return fmt.Errorf("not in the scrapes: %v", left)
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
}

package alerts_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/vipstack/vipstack/internal/alerts"
	"github.com/vipstack/vipstack/internal/chart"
)

// TestDashboardConfigMap: with monitoring.grafanaDashboard.enabled the
// chart renders one ConfigMap labelled grafana_dashboard whose
// vipstack.json is dashboards/vipstack.json; the dashboard is valid JSON
// with a uid, and every panel has a query that selects the dashboard's
// $namespace and names a vipstack_ series.
func TestDashboardConfigMap(t *testing.T) {
	h, _, root := tools(t)
	file, err := os.ReadFile(filepath.Join(root, "charts", "vipstack", "dashboards", "vipstack.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Template(t.Context(), chart.Namespace, "monitoring.grafanaDashboard.enabled=true", "monitoring.labels.release=prometheus")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := chart.Split(out)
	if err != nil {
		t.Fatal(err)
	}
	var found int
	for _, d := range docs {
		var cm struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal([]byte(d.Text), &cm); err != nil {
			t.Fatal(err)
		}
		if cm.Kind != "ConfigMap" || cm.Data["vipstack.json"] == "" {
			continue
		}
		found++
		if cm.Metadata.Labels["grafana_dashboard"] != "1" || cm.Metadata.Labels["release"] != "prometheus" {
			t.Errorf("labels %v, want grafana_dashboard 1 and monitoring.labels", cm.Metadata.Labels)
		}
		if strings.TrimSpace(cm.Data["vipstack.json"]) != strings.TrimSpace(string(file)) {
			t.Error("the ConfigMap's vipstack.json is not dashboards/vipstack.json")
		}
	}
	if found != 1 {
		t.Fatalf("%d dashboard ConfigMaps, want 1", found)
	}
	var d struct {
		UID string `json:"uid"`
	}
	if err := json.Unmarshal(file, &d); err != nil || d.UID == "" {
		t.Fatalf("dashboards/vipstack.json: uid %q, %v", d.UID, err)
	}
	panels, err := alerts.DashboardPanels(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range panels {
		for _, e := range p.Exprs {
			if !strings.Contains(e, `namespace=~"$namespace"`) {
				t.Errorf("panel %q: %s does not select $namespace", p.Title, e)
			}
			if len(alerts.MetricNames(e)) == 0 {
				t.Errorf("panel %q: %s names no vipstack_ series", p.Title, e)
			}
		}
	}
	out, err = h.Template(t.Context(), chart.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "grafana_dashboard") {
		t.Error("the dashboard is rendered by default")
	}
}

func TestMetricNames(t *testing.T) {
	got := alerts.MetricNames(`max by (pool) (vipstack_k8s_pool_assigned{namespace="vipstack_x"}) / on() vipstack_k8s_pool_addresses > 0 or up{job="vipstack_y"}`)
	if strings.Join(got, " ") != "vipstack_k8s_pool_addresses vipstack_k8s_pool_assigned" {
		t.Fatalf("%v", got)
	}
}

// TestMonitorsLabelNode: the agent's PodMonitor and ServiceMonitor both
// set the node label (from the pod's node) that the alerts and the
// dashboard group by.
func TestMonitorsLabelNode(t *testing.T) {
	h, _, _ := tools(t)
	out, err := h.Template(t.Context(), chart.Namespace, "monitoring.podMonitor.enabled=true", "monitoring.bearerTokenSecret.name=prometheus-token", "monitoring.serviceMonitor.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := chart.Split(out)
	if err != nil {
		t.Fatal(err)
	}
	type relabel struct {
		SourceLabels []string `json:"sourceLabels"`
		TargetLabel  string   `json:"targetLabel"`
	}
	type endpoint struct {
		Relabelings []relabel `json:"relabelings"`
	}
	found := map[string]bool{}
	for _, d := range docs {
		var m struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				PodMetricsEndpoints []endpoint `json:"podMetricsEndpoints"`
				Endpoints           []endpoint `json:"endpoints"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(d.Text), &m); err != nil {
			t.Fatal(err)
		}
		if m.Metadata.Name != "vipstack-agent" || (m.Kind != "PodMonitor" && m.Kind != "ServiceMonitor") {
			continue
		}
		for _, e := range append(m.Spec.PodMetricsEndpoints, m.Spec.Endpoints...) {
			for _, r := range e.Relabelings {
				if r.TargetLabel == "node" && strings.Join(r.SourceLabels, ",") == "__meta_kubernetes_pod_node_name" {
					found[m.Kind] = true
				}
			}
		}
	}
	for _, k := range []string{"PodMonitor", "ServiceMonitor"} {
		if !found[k] {
			t.Errorf("the agent's %s does not set node from __meta_kubernetes_pod_node_name", k)
		}
	}
}

package chart_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// object returns the rendered object kind/name, or nil.
func (r rendered) object(kind, name string) *unstructured.Unstructured {
	for _, u := range r {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	return nil
}

// metricsView is what the chart renders for one component's metrics
// endpoint and its scraping.
type metricsView struct {
	Args        []string // --metrics-* arguments
	Mounts      []string // name:mountPath:readOnly
	Volumes     []string // name:secretName
	ReviewRules []string // the component ClusterRole's rules on authentication/authorization.k8s.io
	Monitor     map[string]any
}

func viewMetrics(t *testing.T, r rendered, component, monitorKind string) metricsView {
	t.Helper()
	kind := map[string]string{"agent": "DaemonSet", "controller": "Deployment"}[component]
	c := r.container(t, kind)
	var v metricsView
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	for _, a := range args {
		if strings.HasPrefix(a, "--metrics-") && !strings.HasPrefix(a, "--metrics-addr") {
			v.Args = append(v.Args, a)
		}
	}
	mounts, _, _ := unstructured.NestedSlice(c, "volumeMounts")
	for _, x := range mounts {
		m := x.(map[string]any)
		if m["name"] == "metrics-tls" {
			v.Mounts = append(v.Mounts, fmt.Sprintf("%s:%s:%v", m["name"], m["mountPath"], m["readOnly"]))
		}
	}
	vols, _, _ := unstructured.NestedSlice(r.object(kind, "vipstack-"+component).Object, "spec", "template", "spec", "volumes")
	for _, x := range vols {
		m := x.(map[string]any)
		if m["name"] == "metrics-tls" {
			v.Volumes = append(v.Volumes, str(m, "name")+":"+str(m, "secret", "secretName"))
		}
	}
	role := r.object("ClusterRole", "vipstack-"+component)
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	for _, x := range rules {
		m := x.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(m, "apiGroups")
		res, _, _ := unstructured.NestedStringSlice(m, "resources")
		verbs, _, _ := unstructured.NestedStringSlice(m, "verbs")
		for _, g := range groups {
			if g == "authentication.k8s.io" || g == "authorization.k8s.io" {
				v.ReviewRules = append(v.ReviewRules, g+" "+strings.Join(res, ",")+" "+strings.Join(verbs, ","))
			}
		}
	}
	if monitorKind != "" {
		mon := r.object(monitorKind, "vipstack-"+component)
		if mon == nil {
			t.Fatalf("no %s vipstack-%s", monitorKind, component)
		}
		field := map[string]string{"PodMonitor": "podMetricsEndpoints", "ServiceMonitor": "endpoints"}[monitorKind]
		eps, _, _ := unstructured.NestedSlice(mon.Object, "spec", field)
		if len(eps) != 1 {
			t.Fatalf("%s vipstack-%s has %d endpoints, want 1", monitorKind, component, len(eps))
		}
		v.Monitor = map[string]any{}
		for _, k := range []string{"scheme", "tlsConfig", "authorization", "bearerTokenFile"} {
			if x, ok := eps[0].(map[string]any)[k]; ok {
				v.Monitor[k] = x
			}
		}
	}
	return v
}

// TestMetricsAuth: by default the agent and the controller serve their
// metrics over HTTPS behind the API server's TokenReview and
// SubjectAccessReview, their ClusterRoles allow creating both reviews,
// and the monitors scrape over https with a bearer token (Prometheus's
// own for a ServiceMonitor, a Secret's for a PodMonitor); a TLS Secret is
// mounted and named to the endpoint; metricsAuth none turns all of it
// off. The ClusterRole a scraper needs is always rendered and bound to
// monitoring.prometheusServiceAccount when that is set.
func TestMetricsAuth(t *testing.T) {
	h, _ := helm(t)
	reviews := []string{"authentication.k8s.io tokenreviews create", "authorization.k8s.io subjectaccessreviews create"}
	selfSigned := map[string]any{"insecureSkipVerify": true}
	saToken := "/var/run/secrets/kubernetes.io/serviceaccount/token"
	for _, tc := range []struct {
		name, component, monitor string
		set                      []string
		want                     metricsView
	}{
		{name: "agent defaults", component: "agent",
			want: metricsView{Args: []string{"--metrics-auth=kubernetes"}, ReviewRules: reviews}},
		{name: "controller defaults", component: "controller",
			want: metricsView{Args: []string{"--metrics-auth=kubernetes"}, ReviewRules: reviews}},
		{name: "agent ServiceMonitor", component: "agent", monitor: "ServiceMonitor", set: []string{"monitoring.serviceMonitor.enabled=true"},
			want: metricsView{Args: []string{"--metrics-auth=kubernetes"}, ReviewRules: reviews,
				Monitor: map[string]any{"scheme": "https", "tlsConfig": selfSigned, "bearerTokenFile": saToken}}},
		{name: "controller ServiceMonitor", component: "controller", monitor: "ServiceMonitor", set: []string{"monitoring.serviceMonitor.enabled=true"},
			want: metricsView{Args: []string{"--metrics-auth=kubernetes"}, ReviewRules: reviews,
				Monitor: map[string]any{"scheme": "https", "tlsConfig": selfSigned, "bearerTokenFile": saToken}}},
		{name: "agent PodMonitor with a token Secret", component: "agent", monitor: "PodMonitor",
			set: []string{"monitoring.podMonitor.enabled=true", "monitoring.bearerTokenSecret.name=prom-token"},
			want: metricsView{Args: []string{"--metrics-auth=kubernetes"}, ReviewRules: reviews,
				Monitor: map[string]any{"scheme": "https", "tlsConfig": selfSigned,
					"authorization": map[string]any{"type": "Bearer", "credentials": map[string]any{"name": "prom-token", "key": "token"}}}}},
		{name: "agent TLS Secret", component: "agent", set: []string{"agent.metricsTLSSecret=agent-tls"},
			want: metricsView{Args: []string{"--metrics-auth=kubernetes", "--metrics-tls-cert-file=/etc/vipstack/metrics-tls/tls.crt", "--metrics-tls-key-file=/etc/vipstack/metrics-tls/tls.key"},
				Mounts: []string{"metrics-tls:/etc/vipstack/metrics-tls:true"}, Volumes: []string{"metrics-tls:agent-tls"}, ReviewRules: reviews}},
		{name: "controller TLS Secret and CA", component: "controller", monitor: "ServiceMonitor",
			set: []string{"controller.metricsTLSSecret=ctl-tls", "monitoring.serviceMonitor.enabled=true", "monitoring.tlsConfig.insecureSkipVerify=null",
				"monitoring.tlsConfig.ca.secret.name=ctl-tls", "monitoring.tlsConfig.ca.secret.key=ca.crt"},
			want: metricsView{Args: []string{"--metrics-auth=kubernetes", "--metrics-tls-cert-file=/etc/vipstack/metrics-tls/tls.crt", "--metrics-tls-key-file=/etc/vipstack/metrics-tls/tls.key"},
				Mounts: []string{"metrics-tls:/etc/vipstack/metrics-tls:true"}, Volumes: []string{"metrics-tls:ctl-tls"}, ReviewRules: reviews,
				Monitor: map[string]any{"scheme": "https", "tlsConfig": map[string]any{"ca": map[string]any{"secret": map[string]any{"name": "ctl-tls", "key": "ca.crt"}}}, "bearerTokenFile": saToken}}},
		{name: "agent without authentication", component: "agent", monitor: "PodMonitor",
			set:  []string{"agent.metricsAuth=none", "controller.metricsAuth=none", "agent.metricsTLSSecret=ignored", "monitoring.podMonitor.enabled=true"},
			want: metricsView{Monitor: map[string]any{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := viewMetrics(t, render(t, h, tc.set...), tc.component, tc.monitor)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	r := render(t, h)
	reader := r.object("ClusterRole", "vipstack-metrics-reader")
	if reader == nil {
		t.Fatal("no ClusterRole vipstack-metrics-reader")
	}
	rules, _, _ := unstructured.NestedSlice(reader.Object, "rules")
	if diff := cmp.Diff([]any{map[string]any{"nonResourceURLs": []any{"/metrics"}, "verbs": []any{"get"}}}, rules); diff != "" {
		t.Errorf("metrics-reader rules (-want +got):\n%s", diff)
	}
	if b := r.object("ClusterRoleBinding", "vipstack-metrics-reader"); b != nil {
		t.Error("ClusterRoleBinding vipstack-metrics-reader rendered without monitoring.prometheusServiceAccount.name")
	}
	for _, tc := range []struct {
		set  []string
		want []any
	}{
		{set: []string{"monitoring.prometheusServiceAccount.name=prometheus-k8s", "monitoring.prometheusServiceAccount.namespace=monitoring"},
			want: []any{map[string]any{"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}}},
		{set: []string{"monitoring.prometheusServiceAccount.name=prometheus"},
			want: []any{map[string]any{"kind": "ServiceAccount", "name": "prometheus", "namespace": "vs"}}},
	} {
		b := render(t, h, tc.set...).object("ClusterRoleBinding", "vipstack-metrics-reader")
		if b == nil {
			t.Errorf("%v: no ClusterRoleBinding vipstack-metrics-reader", tc.set)
			continue
		}
		subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
		role, _, _ := unstructured.NestedString(b.Object, "roleRef", "name")
		if diff := cmp.Diff(tc.want, subjects); diff != "" || role != "vipstack-metrics-reader" {
			t.Errorf("%v: binding to %s, subjects (-want +got):\n%s", tc.set, role, diff)
		}
	}
}

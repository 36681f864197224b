package chart_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/vipstack/vipstack/internal/chart"
	"github.com/vipstack/vipstack/internal/k8s/k8stest"
	"github.com/vipstack/vipstack/internal/kubetest"
	"github.com/vipstack/vipstack/internal/testutil"
	"github.com/vipstack/vipstack/internal/version"
)

var (
	helmOnce sync.Once
	helmBin  string
	helmErr  error
)

// helm returns the chart's helm runner; the first call builds helm with
// hack/helm-binary.sh unless it is cached (a few minutes cold).
func helm(t *testing.T) (chart.Helm, string) {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := chart.Root(wd)
	if err != nil {
		t.Fatal(err)
	}
	helmOnce.Do(func() { helmBin, helmErr = chart.FindHelm(context.Background(), root) })
	if helmErr != nil {
		t.Fatalf("helm: %v", helmErr)
	}
	return chart.Helm{Bin: helmBin, Chart: filepath.Join(root, "charts", "vipstack")}, root
}

// TestDeployInSync renders deploy/ from the chart and compares it with
// the checked-in files, byte for byte.
func TestDeployInSync(t *testing.T) {
	h, root := helm(t)
	rendered, err := h.Template(t.Context(), chart.Namespace, chart.DeployValues...)
	if err != nil {
		t.Fatal(err)
	}
	files, err := chart.DeployFiles(rendered)
	if err != nil {
		t.Fatal(err)
	}
	withRules, err := h.Template(t.Context(), chart.Namespace, append(append([]string{}, chart.DeployValues...), chart.RulesValues...)...)
	if err != nil {
		t.Fatal(err)
	}
	if files[chart.RulesFile], err = chart.PlainRules(withRules); err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, "deploy", name))
		if err != nil {
			t.Errorf("deploy/%s: %v; run `go run ./hack/gendeploy`", name, err)
			continue
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("deploy/%s is not what charts/vipstack renders; run `go run ./hack/gendeploy` (-rendered +checked in):\n%s", name, diff)
		}
	}
	// A generated file the chart no longer renders is stale.
	entries, err := os.ReadDir(filepath.Join(root, "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() { // deploy/systemd: not from the chart
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, "deploy", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := files[e.Name()]; !ok && bytes.HasPrefix(b, []byte(chart.Header)) {
			t.Errorf("deploy/%s is generated but the chart renders it no more; delete it and run `go run ./hack/gendeploy`", e.Name())
		}
	}
}

// allOn turns on every optional part of the chart.
var allOn = []string{
	"monitoring.podMonitor.enabled=true", "monitoring.serviceMonitor.enabled=true",
	"monitoring.prometheusRule.enabled=true", "monitoring.grafanaDashboard.enabled=true", "monitoring.labels.release=prometheus",
	"openshift.scc.create=true", "namespace.create=true",
	"kubernetesServiceHost=192.0.2.10", "kubernetesServicePort=6443",
	"controller.excludedVRIDs={1,2}", "controller.extraArgs={--workers=8}",
	"monitoring.bearerTokenSecret.name=prometheus-token", "monitoring.prometheusServiceAccount.name=prometheus",
	"agent.metricsTLSSecret=agent-metrics-tls", "controller.metricsTLSSecret=controller-metrics-tls",
}

// TestLint runs helm lint --strict with the defaults and with every
// option on.
func TestLint(t *testing.T) {
	h, _ := helm(t)
	for name, set := range map[string][]string{"defaults": nil, "all on": allOn} {
		t.Run(name, func(t *testing.T) {
			if out, err := h.Lint(t.Context(), set...); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}

// TestValuesRefused gives the chart bad values: values.schema.json, or a
// check in a template, refuses each with an error naming the field, the
// bad value and what is accepted.
func TestValuesRefused(t *testing.T) {
	h, _ := helm(t)
	for _, tc := range []struct {
		set  string
		want string
	}{
		{"controller.replicas=-1", "at '/controller/replicas': minimum: got -1, want 0"},
		{"controller.replica=2", "at '/controller': additional properties 'replica' not allowed"},
		{"agent.nodeselector.a=b", "at '/agent': additional properties 'nodeselector' not allowed"},
		{"image.pullPolicy=Sometimes", "at '/image/pullPolicy': value must be one of 'Always', 'IfNotPresent', 'Never'"},
		{"image.digest=sha256:abc", "at '/image/digest': 'sha256:abc' does not match pattern"},
		{"agent.metricsPort=70000", "at '/agent/metricsPort': maximum: got 70,000, want 65,535"},
		{"agent.logLevel=verbose", "at '/agent/logLevel': value must be one of 'debug', 'info', 'warn', 'error'"},
		{"controller.excludedVRIDs={0}", "at '/controller/excludedVRIDs/0': minimum: got 0, want 1"},
		{"kubernetesServiceHost=https://api", "at '/kubernetesServiceHost': 'https://api' does not match pattern"},
		{"monitoring.prometheusRule.for=5min", "at '/monitoring/prometheusRule/for': '5min' does not match pattern"},
		{"agent.healthPort=9654", "agent.healthPort: 9654 is also agent.metricsPort; the agent binds both on the node's network, so they must differ"},
		{"agent.metricsAuth=tls", "at '/agent/metricsAuth': value must be one of 'kubernetes', 'none'"},
		{"monitoring.podMonitor.enabled=true", "monitoring.podMonitor.enabled with controller.metricsAuth kubernetes: set monitoring.bearerTokenSecret.name"},
		{"agent.healthPort=9653", "agent.healthPort: 9653 is the port of the agent's status endpoint (127.0.0.1:9653, on the node's network); want another port"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			_, err := h.Template(t.Context(), "v", tc.set)
			if err == nil {
				t.Fatalf("accepted; want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q\ndoes not contain %q", err, tc.want)
			}
		})
	}
}

// rendered is helm template's output, parsed.
type rendered []*unstructured.Unstructured

func render(t *testing.T, h chart.Helm, set ...string) rendered {
	t.Helper()
	out, err := h.Template(t.Context(), "vs", set...)
	if err != nil {
		t.Fatal(err)
	}
	return k8stest.Parse(t, "helm template", out)
}

func (r rendered) kinds() []string {
	var out []string
	for _, u := range r {
		out = append(out, u.GetKind()+"/"+u.GetName())
	}
	slices.Sort(out)
	return out
}

// container returns the only container of the workload of kind.
func (r rendered) container(t *testing.T, kind string) map[string]any {
	t.Helper()
	for _, u := range r {
		if u.GetKind() != kind {
			continue
		}
		cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		if len(cs) != 1 {
			t.Fatalf("%s %s has %d containers, want 1", kind, u.GetName(), len(cs))
		}
		return cs[0].(map[string]any)
	}
	t.Fatalf("no %s rendered", kind)
	return nil
}

func str(m map[string]any, path ...string) string {
	s, _, _ := unstructured.NestedString(m, path...)
	return s
}

// pod summarises what a container runs and how it is probed.
type pod struct {
	Image       string
	Command     []string
	Subcommand  string
	HealthArg   string // --health-addr's value
	HealthPort  int64  // the container port named health
	Liveness    string // path and port of the httpGet probe
	Readiness   string
	APIHostEnv  string
	APIPortEnv  string
	PullPolicy  string
	ArgsWithout []string // args of interest besides the above
}

func summarise(t *testing.T, c map[string]any, interesting ...string) pod {
	t.Helper()
	var p pod
	p.Image, p.PullPolicy = str(c, "image"), str(c, "imagePullPolicy")
	p.Command, _, _ = unstructured.NestedStringSlice(c, "command")
	args, _, _ := unstructured.NestedStringSlice(c, "args")
	if len(args) > 0 {
		p.Subcommand = args[0]
	}
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--health-addr="); ok {
			p.HealthArg = v
		}
		for _, i := range interesting {
			if strings.HasPrefix(a, i) {
				p.ArgsWithout = append(p.ArgsWithout, a)
			}
		}
	}
	ports, _, _ := unstructured.NestedSlice(c, "ports")
	for _, x := range ports {
		m := x.(map[string]any)
		if m["name"] == "health" {
			p.HealthPort, _, _ = unstructured.NestedInt64(m, "containerPort")
		}
	}
	probe := func(name string) string {
		return fmt.Sprintf("%s %v", str(c, name, "httpGet", "path"), c[name].(map[string]any)["httpGet"].(map[string]any)["port"])
	}
	p.Liveness, p.Readiness = probe("livenessProbe"), probe("readinessProbe")
	env, _, _ := unstructured.NestedSlice(c, "env")
	for _, x := range env {
		m := x.(map[string]any)
		switch m["name"] {
		case "KUBERNETES_SERVICE_HOST":
			p.APIHostEnv = fmt.Sprint(m["value"])
		case "KUBERNETES_SERVICE_PORT":
			p.APIPortEnv = fmt.Sprint(m["value"])
		}
	}
	return p
}

// appVersion reads the chart's appVersion.
func appVersion(t *testing.T, h chart.Helm) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.Chart, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c.AppVersion
}

// TestChartVersion keeps the chart's appVersion, and so the image deploy/
// and the chart install by default, the project's release.
func TestChartVersion(t *testing.T) {
	h, _ := helm(t)
	if got := appVersion(t, h); got != version.Release {
		t.Errorf("Chart.yaml appVersion %q, internal/version.Release %q: set both to the release", got, version.Release)
	}
}

// TestRender checks what values do to the pods: one image reference (tag
// from appVersion unless overridden, or a digest), the subcommand as args
// of the image's /vipstack entrypoint (never command), both probes on the
// port --health-addr binds, the agent with no declared (host) ports, and
// the API server env for clusters without kube-proxy.
func TestRender(t *testing.T) {
	h, _ := helm(t)
	img := "ghcr.io/vipstack/vipstack:" + appVersion(t, h)
	dflt := func(sub, port string, n int64) pod {
		if sub == "agent" {
			// No declared ports (host ports would keep the surge pod of a
			// rolling update off the node): the probes name the number.
			return pod{Image: img, PullPolicy: "IfNotPresent", Subcommand: sub, HealthArg: ":" + port,
				Liveness: "/healthz " + port, Readiness: "/readyz " + port}
		}
		return pod{Image: img, PullPolicy: "IfNotPresent", Subcommand: sub, HealthArg: ":" + port, HealthPort: n,
			Liveness: "/healthz health", Readiness: "/readyz health"}
	}
	for _, tc := range []struct {
		name       string
		set        []string
		agent, ctl pod
	}{
		{name: "defaults", agent: dflt("agent", "9655", 9655), ctl: dflt("controller", "9656", 9656)},
		{name: "image tag and policy", set: []string{"image.repository=registry.example/vs", "image.tag=v1.2.3", "image.pullPolicy=Always"},
			agent: func() pod {
				p := dflt("agent", "9655", 9655)
				p.Image, p.PullPolicy = "registry.example/vs:v1.2.3", "Always"
				return p
			}(),
			ctl: func() pod {
				p := dflt("controller", "9656", 9656)
				p.Image, p.PullPolicy = "registry.example/vs:v1.2.3", "Always"
				return p
			}()},
		{name: "digest", set: []string{"image.digest=sha256:" + strings.Repeat("ab", 32)},
			agent: func() pod {
				p := dflt("agent", "9655", 9655)
				p.Image = "ghcr.io/vipstack/vipstack@sha256:" + strings.Repeat("ab", 32)
				return p
			}(),
			ctl: func() pod {
				p := dflt("controller", "9656", 9656)
				p.Image = "ghcr.io/vipstack/vipstack@sha256:" + strings.Repeat("ab", 32)
				return p
			}()},
		{name: "health ports", set: []string{"agent.healthPort=19655", "controller.healthPort=8081"},
			agent: dflt("agent", "19655", 19655), ctl: dflt("controller", "8081", 8081)},
		{name: "no kube-proxy", set: []string{"kubernetesServiceHost=192.0.2.10", "kubernetesServicePort=16443"},
			agent: func() pod {
				p := dflt("agent", "9655", 9655)
				p.APIHostEnv, p.APIPortEnv = "192.0.2.10", "16443"
				return p
			}(),
			ctl: func() pod {
				p := dflt("controller", "9656", 9656)
				p.APIHostEnv, p.APIPortEnv = "192.0.2.10", "16443"
				return p
			}()},
		{name: "agent and controller flags", set: []string{"agent.announceRate=0", "agent.logLevel=debug", "controller.excludedVRIDs={7,9}"},
			agent: func() pod {
				p := dflt("agent", "9655", 9655)
				p.ArgsWithout = []string{"--announce-rate=0", "--log-level=debug"}
				return p
			}(),
			ctl: func() pod {
				p := dflt("controller", "9656", 9656)
				p.ArgsWithout = []string{"--log-level=info", "--excluded-vrids=7,9"}
				return p
			}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := render(t, h, tc.set...)
			if tc.agent.ArgsWithout == nil {
				tc.agent.ArgsWithout, tc.ctl.ArgsWithout = []string{"--log-level=info"}, []string{"--log-level=info"}
			}
			got := summarise(t, r.container(t, "DaemonSet"), "--announce-rate=0", "--log-level")
			if diff := cmp.Diff(tc.agent, got); diff != "" {
				t.Errorf("agent (-want +got):\n%s", diff)
			}
			got = summarise(t, r.container(t, "Deployment"), "--log-level", "--excluded-vrids")
			if diff := cmp.Diff(tc.ctl, got); diff != "" {
				t.Errorf("controller (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOptionalObjects checks which objects each switch adds or removes.
func TestOptionalObjects(t *testing.T) {
	h, _ := helm(t)
	base := render(t, h).kinds()
	for _, tc := range []struct {
		name    string
		set     []string
		added   []string
		removed []string
	}{
		{name: "defaults"},
		{name: "crds not installed", set: []string{"crds.install=false"},
			removed: []string{"CustomResourceDefinition/bgppeers.vipstack.io", "CustomResourceDefinition/ippools.vipstack.io", "CustomResourceDefinition/vipgroups.vipstack.io"}},
		{name: "no RBAC, no service accounts", set: []string{"rbac.create=false", "controller.serviceAccount.create=false", "agent.serviceAccount.create=false"},
			removed: []string{"ClusterRole/vipstack-agent", "ClusterRole/vipstack-controller", "ClusterRole/vipstack-metrics-reader", "ClusterRoleBinding/vipstack-agent", "ClusterRoleBinding/vipstack-controller",
				"Role/vipstack-agent-passwords", "Role/vipstack-agent-status", "Role/vipstack-controller-kube-vip", "Role/vipstack-controller-leader-election", "Role/vipstack-controller-passwords",
				"RoleBinding/vipstack-agent-passwords", "RoleBinding/vipstack-agent-status", "RoleBinding/vipstack-controller-kube-vip", "RoleBinding/vipstack-controller-leader-election", "RoleBinding/vipstack-controller-passwords",
				"ServiceAccount/vipstack-agent", "ServiceAccount/vipstack-controller"}},
		{name: "namespace", set: []string{"namespace.create=true"}, added: []string{"Namespace/vs"}},
		{name: "pod monitors", set: []string{"monitoring.podMonitor.enabled=true", "monitoring.bearerTokenSecret.name=prometheus-token"}, added: []string{"PodMonitor/vipstack-agent", "PodMonitor/vipstack-controller"}},
		{name: "service monitors", set: []string{"monitoring.serviceMonitor.enabled=true"},
			added: []string{"Service/vipstack-agent-metrics", "Service/vipstack-controller-metrics", "ServiceMonitor/vipstack-agent", "ServiceMonitor/vipstack-controller"}},
		{name: "rules", set: []string{"monitoring.prometheusRule.enabled=true"}, added: []string{"PrometheusRule/vipstack"}},
		{name: "dashboard", set: []string{"monitoring.grafanaDashboard.enabled=true"}, added: []string{"ConfigMap/vipstack-dashboard"}},
		{name: "openshift", set: []string{"openshift.scc.create=true"},
			added: []string{"ClusterRole/vipstack-agent-scc", "RoleBinding/vipstack-agent-scc", "SecurityContextConstraints/vipstack-agent"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := render(t, h, tc.set...).kinds()
			var added, removed []string
			for _, k := range got {
				if !slices.Contains(base, k) {
					added = append(added, k)
				}
			}
			for _, k := range base {
				if !slices.Contains(got, k) {
					removed = append(removed, k)
				}
			}
			if diff := cmp.Diff(tc.added, added); diff != "" {
				t.Errorf("added objects (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.removed, removed); diff != "" {
				t.Errorf("removed objects (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSecretsRBAC lists who may do what with Secrets, as the chart
// grants it: the controller gets them by name anywhere (the VRRP
// password a VIPGroup names) and keeps its copies in the release's
// namespace; the agent, on every node, gets Secrets in the release's
// namespace only (those copies), and no ClusterRole of the agent's names
// Secrets. Each Role is bound to the ServiceAccount of its component.
func TestSecretsRBAC(t *testing.T) {
	h, _ := helm(t)
	r := render(t, h)
	got := map[string][]string{}
	for _, u := range r {
		if u.GetKind() != "Role" && u.GetKind() != "ClusterRole" {
			continue
		}
		rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
		for _, x := range rules {
			rule, _ := x.(map[string]any)
			res, _, _ := unstructured.NestedStringSlice(rule, "resources")
			groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
			if !slices.Contains(res, "secrets") && !slices.Contains(res, "*") {
				continue
			}
			if !slices.Contains(groups, "") && !slices.Contains(groups, "*") {
				continue
			}
			verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
			key := u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
			got[key] = append(got[key], verbs...)
		}
	}
	want := map[string][]string{
		"ClusterRole /vipstack-controller":      {"get"},
		"Role vs/vipstack-controller-passwords": {"get", "list", "watch", "create", "update", "delete"},
		"Role vs/vipstack-agent-passwords":      {"get"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rules on Secrets (-want +got):\n%s", diff)
	}
	bound := map[string]string{}
	for _, u := range r {
		if u.GetKind() != "RoleBinding" {
			continue
		}
		role, _, _ := unstructured.NestedString(u.Object, "roleRef", "name")
		subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
		for _, x := range subjects {
			s, _ := x.(map[string]any)
			bound[u.GetNamespace()+"/"+role] += fmt.Sprintf("%v %v/%v;", s["kind"], s["namespace"], s["name"])
		}
	}
	for role, sa := range map[string]string{"vs/vipstack-controller-passwords": "ServiceAccount vs/vipstack-controller;",
		"vs/vipstack-agent-passwords": "ServiceAccount vs/vipstack-agent;"} {
		if bound[role] != sa {
			t.Errorf("Role %s is bound to %q, want %q", role, bound[role], sa)
		}
	}
}

// prometheusOperator is the module whose example/ holds the Prometheus
// Operator's CRDs (PodMonitor, ServiceMonitor, PrometheusRule), fetched
// through the Go module proxy like any module.
const prometheusOperator = "github.com/prometheus-operator/prometheus-operator@v0.85.0"

// monitoringCRDs returns the Prometheus Operator's CRDs that the chart's
// monitoring objects need.
func monitoringCRDs(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "mod", "download", "-json", prometheusOperator)
	cmd.Dir = t.TempDir() // outside the module: leave go.mod and go.sum alone
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v\n%s%s", prometheusOperator, err, out, stderr.String())
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Fatalf("go mod download %s: no directory in %s (%v)", prometheusOperator, out, err)
	}
	var crds []*unstructured.Unstructured
	for _, kind := range []string{"podmonitors", "servicemonitors", "prometheusrules"} {
		path := filepath.Join(m.Dir, "example", "prometheus-operator-crd", "monitoring.coreos.com_"+kind+".yaml")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		crds = append(crds, k8stest.Parse(t, path, b)...)
	}
	return crds
}

// TestDryRun sends the chart, rendered with every option but OpenShift's
// on (the test API server serves no SecurityContextConstraints), to a real
// API server: the CRDs and RBAC are applied, the rest passes a server-side
// dry run (schemas, the Prometheus Operator's CRDs' included, defaults,
// admission).
func TestDryRun(t *testing.T) {
	h, _ := helm(t)
	env := kubetest.Start(t)
	out, err := h.Template(t.Context(), "vipstack-test", allButOpenShift()...)
	if err != nil {
		t.Fatal(err)
	}
	dryRun(t, env, out)
	// The ServiceMonitors without a token Secret: Prometheus's own token
	// from its file.
	out, err = h.Template(t.Context(), "vipstack-test", "monitoring.serviceMonitor.enabled=true", "monitoring.prometheusRule.enabled=true", "monitoring.grafanaDashboard.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	dryRun(t, env, out)
}

// allButOpenShift is allOn without the OpenShift objects, whose types the
// test API server does not serve.
func allButOpenShift() []string {
	var set []string
	for _, s := range allOn {
		if !strings.HasPrefix(s, "openshift.") {
			set = append(set, s)
		}
	}
	return set
}

// TestSupportedVersions applies the chart (every optional part the test
// API server can serve), the CRDs and deploy/examples.yaml to the oldest
// Kubernetes vipstack supports and to the newest the module proxy serves,
// each rendered by helm for that version: the CRDs for real, the rest by
// server-side dry run, as TestDryRun does for tools/kube's version.
func TestSupportedVersions(t *testing.T) {
	h, root := helm(t)
	for _, tc := range []struct{ module, version string }{
		{module: "tools/kube-oldest", version: "v1.34"},
		{module: "tools/kube-newest", version: "v1.37"},
	} {
		t.Run(tc.module, func(t *testing.T) {
			env := kubetest.StartWith(t, kubetest.Options{Module: tc.module})
			dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
			if err != nil {
				t.Fatal(err)
			}
			sv, err := dc.ServerVersion()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(sv.GitVersion, tc.version+".") {
				t.Fatalf("%s's API server is %s, want %s.x", tc.module, sv.GitVersion, tc.version)
			}
			args := []string{"template", chart.Release, h.Chart, "--namespace", "vipstack-test", "--kube-version", sv.GitVersion}
			for _, s := range allButOpenShift() {
				args = append(args, "--set", s)
			}
			out, err := h.Run(t.Context(), args...)
			if err != nil {
				t.Fatal(err)
			}
			dryRun(t, env, out)
			c := k8stest.Client(t, env.Config)
			for _, ns := range []string{"keepalived-operator", "demo"} {
				nsObj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
				if err := k8stest.Apply(t.Context(), c, []*unstructured.Unstructured{nsObj}, false); err != nil {
					t.Fatal(err)
				}
			}
			ex, err := os.ReadFile(filepath.Join(root, "deploy", "examples.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range k8stest.Parse(t, "deploy/examples.yaml", ex) {
				if err := k8stest.Apply(t.Context(), c, []*unstructured.Unstructured{u}, true); err != nil {
					t.Errorf("deploy/examples.yaml %s %s on %s: %v", u.GetKind(), u.GetName(), sv.GitVersion, err)
				}
			}
			// The CRDs' CEL IP rules run on this version: a block with
			// host bits set is refused with the rule's message.
			bad := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "vipstack.io/v1alpha1", "kind": "IPPool", "metadata": map[string]any{"name": "bad"},
				"spec": map[string]any{"addresses": []any{"192.0.2.33/27"}},
			}}
			err = k8stest.Apply(t.Context(), c, []*unstructured.Unstructured{bad}, true)
			if err == nil || !strings.Contains(err.Error(), "without host bits") {
				t.Errorf("IPPool with 192.0.2.33/27 on %s: err %v, want the CRD's CEL rule to refuse it", sv.GitVersion, err)
			}
			t.Logf("%s: the chart, the CRDs and deploy/examples.yaml are accepted", sv.GitVersion)
		})
	}
}

// dryRun applies helm template's output to env: the CRDs, the namespace
// and RBAC for real, everything else by server-side dry run, and checks
// that a misspelt field is refused (so the dry run checks fields).
func dryRun(t *testing.T, env *kubetest.Env, out []byte) {
	t.Helper()
	c := k8stest.Client(t, env.Config)
	k8stest.ApplyCRDs(t, c, monitoringCRDs(t))
	objs := k8stest.Parse(t, "helm template", out)
	// Applied for real in helm's order (namespace, CRDs, RBAC), then the
	// rest as a dry run once the CRDs are served.
	var real, dry, crds []*unstructured.Unstructured
	for _, u := range objs {
		switch u.GetKind() {
		case "CustomResourceDefinition":
			crds = append(crds, u)
		case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			real = append(real, u)
		default:
			dry = append(dry, u)
		}
	}
	if len(crds) != 3 || len(dry) < 8 {
		t.Fatalf("rendered %d CRDs and %d other objects (%v); want 3 and the workloads and monitoring objects", len(crds), len(dry), rendered(objs).kinds())
	}
	k8stest.ApplyCRDs(t, c, crds)
	if err := k8stest.Apply(t.Context(), c, real, false); err != nil {
		t.Fatal(err)
	}
	for _, u := range dry {
		t.Run(u.GetKind()+"/"+u.GetName(), func(t *testing.T) {
			if err := k8stest.Apply(t.Context(), c, []*unstructured.Unstructured{u}, true); err != nil {
				t.Fatal(err)
			}
		})
	}
	// The dry run would catch a misspelt field: server-side apply checks
	// every field against the schema, a CRD's too.
	for _, u := range dry {
		if u.GetKind() != "PodMonitor" && u.GetKind() != "DaemonSet" {
			continue
		}
		bad := u.DeepCopy()
		if err := unstructured.SetNestedField(bad.Object, true, "spec", "honourLabels"); err != nil {
			t.Fatal(err)
		}
		err := k8stest.Apply(t.Context(), c, []*unstructured.Unstructured{bad}, true)
		if err == nil || !strings.Contains(err.Error(), "honourLabels") {
			t.Errorf("%s %s with spec.honourLabels: error %v, want one naming the field", bad.GetKind(), bad.GetName(), err)
		}
	}
}

// TestHelmLifecycle runs helm install, upgrade and uninstall against a real
// API server, as docs/install.md tells an operator to: the namespace made
// and labelled first, then the release. The upgrade changes the
// DaemonSet; the uninstall removes the workloads and RBAC but keeps the
// CRDs and the IPPools made meanwhile.
func TestHelmLifecycle(t *testing.T) {
	h, _ := helm(t)
	env := kubetest.Start(t)
	c := k8stest.Client(t, env.Config)
	ctx := t.Context()
	ns := k8stest.Parse(t, "namespace", []byte(`
apiVersion: v1
kind: Namespace
metadata:
  name: vipstack-system
  labels: {pod-security.kubernetes.io/enforce: privileged}
`))
	if err := k8stest.Apply(ctx, c, ns, false); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		t.Helper()
		args = append(args, "--kubeconfig", env.Kubeconfig, "--namespace", chart.Namespace)
		if out, err := h.Run(ctx, args...); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	get := func(kind, namespace, name string) (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{}
		gv := map[string]string{"DaemonSet": "apps/v1", "Deployment": "apps/v1", "ClusterRole": "rbac.authorization.k8s.io/v1",
			"CustomResourceDefinition": "apiextensions.k8s.io/v1", "IPPool": "vipstack.io/v1alpha1"}[kind]
		u.SetAPIVersion(gv)
		u.SetKind(kind)
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u)
		return u, err
	}
	agentArgs := func() []string {
		t.Helper()
		ds, err := get("DaemonSet", chart.Namespace, "vipstack-agent")
		if err != nil {
			t.Fatal(err)
		}
		cs, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "containers")
		args, _, _ := unstructured.NestedStringSlice(cs[0].(map[string]any), "args")
		return args
	}

	run(append([]string{"install", chart.Release, h.Chart}, "--set", "agent.logLevel=info")...)
	if args := agentArgs(); !slices.Contains(args, "--log-level=info") {
		t.Errorf("installed agent args %v, want --log-level=info", args)
	}
	// The release installed the CRDs: wait until the kinds are served.
	testutil.Eventually(t, 30*time.Second, func() error {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion("vipstack.io/v1alpha1")
		l.SetKind("IPPoolList")
		return c.List(ctx, l)
	})
	pool := k8stest.Parse(t, "pool", []byte(`
apiVersion: vipstack.io/v1alpha1
kind: IPPool
metadata: {name: lifecycle}
spec: {addresses: [198.18.0.0/28]}
`))
	if err := k8stest.Apply(ctx, c, pool, false); err != nil {
		t.Fatal(err)
	}

	run("upgrade", chart.Release, h.Chart, "--set", "agent.logLevel=debug")
	if args := agentArgs(); !slices.Contains(args, "--log-level=debug") {
		t.Errorf("upgraded agent args %v, want --log-level=debug", args)
	}

	run("uninstall", chart.Release)
	for _, o := range []struct{ kind, ns, name string }{
		{"DaemonSet", chart.Namespace, "vipstack-agent"}, {"Deployment", chart.Namespace, "vipstack-controller"},
		{"ClusterRole", "", "vipstack-agent"},
	} {
		if _, err := get(o.kind, o.ns, o.name); !apierrors.IsNotFound(err) {
			t.Errorf("after uninstall, %s %s: %v, want not found", o.kind, o.name, err)
		}
	}
	for _, o := range []struct{ kind, name string }{
		{"CustomResourceDefinition", "ippools.vipstack.io"}, {"CustomResourceDefinition", "vipgroups.vipstack.io"}, {"IPPool", "lifecycle"},
	} {
		if _, err := get(o.kind, "", o.name); err != nil {
			t.Errorf("after uninstall, %s %s: %v, want it kept", o.kind, o.name, err)
		}
	}
}

// TestInstallManifest applies deploy/vipstack.yaml for real, as
// `kubectl apply --server-side -f deploy/vipstack.yaml` does, to an empty
// API server: every object in it is accepted in the file's order.
func TestInstallManifest(t *testing.T) {
	env := kubetest.Start(t)
	c := k8stest.Client(t, env.Config)
	objs := k8stest.Objects(t, chart.AllInOne)
	kinds := map[string]bool{}
	for _, u := range objs {
		if err := k8stest.Apply(t.Context(), c, []*unstructured.Unstructured{u}, false); err != nil {
			t.Fatal(err)
		}
		kinds[u.GetKind()] = true
	}
	for _, k := range []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "Deployment", "DaemonSet"} {
		if !kinds[k] {
			t.Errorf("deploy/%s holds no %s", chart.AllInOne, k)
		}
	}
}

// TestValuesDocumented checks docs/install.md's values table against
// values.yaml: every key is in the table (or its parent is, for free-form
// maps such as resources), and every key in the table exists.
func TestValuesDocumented(t *testing.T) {
	h, root := helm(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The values table is the one in the "### Values" section; the doc's
	// other tables (ipfailover flags, systemd units) are not values.
	_, section, ok := strings.Cut(string(doc), "\n### Values\n")
	if !ok {
		t.Fatal("docs/install.md has no ### Values section")
	}
	section, _, _ = strings.Cut(section, "\n#")
	table := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if k, ok := strings.CutPrefix(line, "| `"); ok {
			if k, _, ok := strings.Cut(k, "`"); ok && !strings.HasPrefix(k, "Vipstack") {
				table[k] = true
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(h.Chart, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	exists := map[string]bool{}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			key := prefix + k
			exists[key] = true
			sub, isMap := v.(map[string]any)
			switch {
			case table[key]:
				// Documented as a whole; its children may be mentioned too.
				if isMap {
					for c := range sub {
						exists[key+"."+c] = true
					}
				}
			case isMap && len(sub) > 0:
				walk(key+".", sub)
			default:
				t.Errorf("values.yaml key %s is not in docs/install.md's values table", key)
			}
		}
	}
	walk("", values)
	for k := range table {
		if !exists[k] {
			t.Errorf("docs/install.md's values table names %s, which values.yaml does not have", k)
		}
	}
}

// TestAgentSurges: the agent's DaemonSet rolls with a surge pod (the new
// agent beside the old, which hands over in place), which the scheduler
// only places when the agent declares no host ports; its grace period
// covers the hand-off's bounds (5 s for a starting successor, 3 s to take
// over).
func TestAgentSurges(t *testing.T) {
	h, _ := helm(t)
	r := render(t, h)
	for _, u := range r {
		if u.GetKind() != "DaemonSet" {
			continue
		}
		ru, _, _ := unstructured.NestedMap(u.Object, "spec", "updateStrategy", "rollingUpdate")
		if fmt.Sprint(ru["maxSurge"]) != "1" || fmt.Sprint(ru["maxUnavailable"]) != "0" {
			t.Errorf("agent rollingUpdate %v, want maxSurge 1 and maxUnavailable 0", ru)
		}
		grace, _, _ := unstructured.NestedInt64(u.Object, "spec", "template", "spec", "terminationGracePeriodSeconds")
		if grace < 10 {
			t.Errorf("agent terminationGracePeriodSeconds %d, want at least 10 for the hand-off", grace)
		}
	}
	if ports, found, _ := unstructured.NestedSlice(r.container(t, "DaemonSet"), "ports"); found || len(ports) > 0 {
		t.Errorf("agent container declares ports %v: on the host network they are host ports, and a surge pod cannot be scheduled", ports)
	}
}

package alerts_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/vipstack/vipstack/internal/alerts"
	"github.com/vipstack/vipstack/internal/chart"
)

var (
	toolsOnce            sync.Once
	helmBin, promtoolBin string
	toolsErr             error
)

// tools returns helm and promtool, built by hack/helm-binary.sh and
// hack/promtool-binary.sh unless cached (minutes cold), and the module's
// root.
func tools(t *testing.T) (chart.Helm, string, string) {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := chart.Root(wd)
	if err != nil {
		t.Fatal(err)
	}
	toolsOnce.Do(func() {
		if helmBin, toolsErr = chart.FindHelm(context.Background(), root); toolsErr != nil {
			return
		}
		promtoolBin, toolsErr = alerts.FindPromtool(context.Background(), root)
	})
	if toolsErr != nil {
		t.Fatal(toolsErr)
	}
	return chart.Helm{Bin: helmBin, Chart: filepath.Join(root, "charts", "vipstack")}, promtoolBin, root
}

// chartRules renders the chart's PrometheusRule as deploy/ is rendered
// (release vipstack in vipstack-system, default values).
func chartRules(t *testing.T, h chart.Helm) alerts.RuleFile {
	t.Helper()
	out, err := h.Template(t.Context(), chart.Namespace, "monitoring.prometheusRule.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	rf, err := alerts.RulesFromChart(out)
	if err != nil {
		t.Fatal(err)
	}
	return rf
}

// promtoolTest writes rf as rules.yaml beside a copy of
// testdata/rules_test.yaml and runs promtool test rules on it.
func promtoolTest(t *testing.T, promtool string, rf alerts.RuleFile) ([]byte, error) {
	t.Helper()
	dir := t.TempDir()
	b, err := yaml.Marshal(rf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join("testdata", "rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), promtool, "test", "rules", "rules_test.yaml")
	cmd.Dir = dir
	return cmd.CombinedOutput()
}

// TestRules runs promtool's rule unit tests (testdata/rules_test.yaml)
// on the chart's rendered rules: each alert fires on its input series
// with the labels and annotations written there, and not before its for.
func TestRules(t *testing.T) {
	h, promtool, _ := tools(t)
	rf := chartRules(t, h)
	cmd := exec.CommandContext(t.Context(), promtool, "check", "rules", "/dev/stdin")
	b, _ := yaml.Marshal(rf)
	cmd.Stdin = strings.NewReader(string(b))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	out, err := promtoolTest(t, promtool, rf)
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	t.Logf("promtool test rules:\n%s", out)
}

// TestEveryAlertTested: every alert of the chart has a test in
// testdata/rules_test.yaml where it fires and one where it does not, and
// every alert carries a severity and the three annotations.
func TestEveryAlertTested(t *testing.T) {
	h, _, _ := tools(t)
	rf := chartRules(t, h)
	b, err := os.ReadFile(filepath.Join("testdata", "rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ut struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `json:"alertname"`
				ExpAlerts []map[string]any `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(b, &ut); err != nil {
		t.Fatal(err)
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range ut.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	var names []string
	for _, r := range rf.Alerts() {
		names = append(names, r.Alert)
		if !fires[r.Alert] {
			t.Errorf("%s: no test where it fires", r.Alert)
		}
		if !silent[r.Alert] {
			t.Errorf("%s: no test where it does not fire", r.Alert)
		}
		if s := r.Labels["severity"]; !slices.Contains([]string{"critical", "warning", "info"}, s) {
			t.Errorf("%s: severity %q, want critical, warning or info", r.Alert, s)
		}
		for _, a := range []string{"summary", "description", "runbook_url"} {
			if r.Annotations[a] == "" {
				t.Errorf("%s: no %s annotation", r.Alert, a)
			}
		}
		if want := "docs/operate.md#" + strings.ToLower(r.Alert); !strings.HasSuffix(r.Annotations["runbook_url"], want) {
			t.Errorf("%s: runbook_url %q, want it to end in %s", r.Alert, r.Annotations["runbook_url"], want)
		}
	}
	for n := range fires {
		if !slices.Contains(names, n) {
			t.Errorf("testdata/rules_test.yaml tests %s, which the chart does not have", n)
		}
	}
	sort.Strings(names)
	t.Logf("alerts: %s", strings.Join(names, ", "))
}

// TestRulesCatchBrokenExpressions: the rule tests fail when any one
// alert's expression is wrong. Each alert's expression in turn is
// replaced by one that never fires, then by its condition negated where
// it ends in a comparison; promtool test rules must fail every time.
func TestRulesCatchBrokenExpressions(t *testing.T) {
	h, promtool, _ := tools(t)
	rf := chartRules(t, h)
	for gi := range rf.Groups {
		for ri, r := range rf.Groups[gi].Rules {
			for _, m := range []struct{ name, expr string }{
				{"never", "vector(1) < 0"},
				{"inverted", invert(r.Expr)},
			} {
				if m.expr == "" {
					continue
				}
				t.Run(r.Alert+"/"+m.name, func(t *testing.T) {
					broken := alerts.RuleFile{Groups: slices.Clone(rf.Groups)}
					broken.Groups[gi].Rules = slices.Clone(rf.Groups[gi].Rules)
					broken.Groups[gi].Rules[ri].Expr = m.expr
					out, err := promtoolTest(t, promtool, broken)
					if err == nil {
						t.Fatalf("promtool test rules passed with %s's expr %q:\n%s", r.Alert, m.expr, out)
					}
					if !strings.Contains(string(out), r.Alert) {
						t.Errorf("promtool's failure does not name %s:\n%s", r.Alert, out)
					}
				})
			}
		}
	}
}

// invert turns the last comparison of expr around (> to <=, == to !=,
// ...), or returns "" when it ends in none.
func invert(expr string) string {
	for _, op := range []struct{ from, to string }{{" == ", " != "}, {" > ", " <= "}, {" < ", " >= "}} {
		if i := strings.LastIndex(expr, op.from); i >= 0 && !strings.Contains(expr[i:], ")") {
			return expr[:i] + op.to + expr[i+len(op.from):]
		}
	}
	return ""
}

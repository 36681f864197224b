package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/vipstack/vipstack/internal/chart"
)

// FindPromtool returns the promtool binary: $VIPSTACK_PROMTOOL if set,
// else the one hack/promtool-binary.sh under root builds (or has cached).
func FindPromtool(ctx context.Context, root string) (string, error) {
	if p := os.Getenv("VIPSTACK_PROMTOOL"); p != "" {
		return p, nil
	}
	script := filepath.Join(root, "hack", "promtool-binary.sh")
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, script)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w\n%s", script, err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// Rule is one alerting rule of the chart's PrometheusRule.
type Rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Group is a rule group, as in a Prometheus rule file.
type Group struct {
	Name  string `json:"name"`
	Rules []Rule `json:"rules"`
}

// RuleFile is a Prometheus rule file: the PrometheusRule's spec.
type RuleFile struct {
	Groups []Group `json:"groups"`
}

// Alerts returns every rule of f.
func (f RuleFile) Alerts() []Rule {
	var out []Rule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// RulesFromChart returns the spec of the one PrometheusRule in helm
// template's output.
func RulesFromChart(rendered []byte) (RuleFile, error) {
	docs, err := chart.Split(rendered)
	if err != nil {
		return RuleFile{}, err
	}
	var found []RuleFile
	for _, d := range docs {
		var obj struct {
			Kind string   `json:"kind"`
			Spec RuleFile `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(d.Text), &obj); err != nil {
			return RuleFile{}, fmt.Errorf("%s: %w", d.Template, err)
		}
		if obj.Kind == "PrometheusRule" {
			found = append(found, obj.Spec)
		}
	}
	if len(found) != 1 {
		return RuleFile{}, fmt.Errorf("helm template rendered %d PrometheusRules, want 1", len(found))
	}
	return found[0], nil
}

// Panel is one panel of the dashboard and its queries.
type Panel struct {
	Title       string
	Description string
	Exprs       []string
}

// DashboardPanels reads the panels of a Grafana dashboard's JSON.
func DashboardPanels(b []byte) ([]Panel, error) {
	var d struct {
		Panels []struct {
			Title       string `json:"title"`
			Description string `json:"description"`
			Targets     []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, err
	}
	var out []Panel
	for _, p := range d.Panels {
		pp := Panel{Title: p.Title, Description: p.Description}
		for _, t := range p.Targets {
			pp.Exprs = append(pp.Exprs, t.Expr)
		}
		if len(pp.Exprs) == 0 {
			return nil, fmt.Errorf("panel %q has no query", p.Title)
		}
		out = append(out, pp)
	}
	return out, nil
}

// metricName matches the names of vipstack's series in a PromQL
// expression (vipstack's own; label values are quoted, so a name in a
// label matcher's value is not taken).
var metricName = regexp.MustCompile(`(?:^|[^"a-zA-Z0-9_])(vipstack_[a-z0-9_]+)`)

// MetricNames returns the vipstack_ series names expr selects, sorted.
func MetricNames(expr string) []string {
	seen := map[string]bool{}
	for _, m := range metricName.FindAllStringSubmatch(expr, -1) {
		seen[m[1]] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

package alerts_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// result is a PromQL instant vector: its samples' label sets and values.
type result struct {
	rows []resultRow
}

type resultRow struct {
	labels [][2]string
	value  float64
}

// evaluate runs expr on samples (each given the labels Prometheus adds
// with the chart's PodMonitor: namespace vipstack-system and node) with
// promtool: a promql_expr_test expecting nothing fails and prints what
// the expression gave, which is parsed; a second run expecting exactly
// that must pass, so the parse is promtool's own answer.
func evaluate(t *testing.T, promtool string, samples []sample, node, expr string) (result, error) {
	t.Helper()
	type expSample struct {
		Labels string  `json:"labels"`
		Value  float64 `json:"value"`
	}
	type exprTest struct {
		Expr       string      `json:"expr"`
		EvalTime   string      `json:"eval_time"`
		ExpSamples []expSample `json:"exp_samples"`
	}
	type series struct {
		Series string `json:"series"`
		Values string `json:"values"`
	}
	var input []series
	for _, s := range samples {
		if !strings.HasPrefix(s.name, "vipstack_") {
			continue
		}
		n := node
		if s.node != "" {
			n = s.node
		}
		extra := fmt.Sprintf(`namespace="vipstack-system",node=%q`, n)
		if strings.Contains(s.labels, `node="`) {
			// honorLabels: the series' own node label (the agent's
			// vipstack_agent_announced) wins over the target's.
			extra = `namespace="vipstack-system"`
		}
		labels := "{" + extra + "}"
		if s.labels != "" {
			labels = "{" + extra + "," + strings.TrimPrefix(s.labels, "{")
		}
		// Constant for 20 minutes: counters increase by nothing.
		input = append(input, series{Series: s.name + labels, Values: s.value + "x20"})
	}
	run := func(exp []expSample) (string, error) {
		dir := t.TempDir()
		doc := map[string]any{"tests": []any{map[string]any{
			"interval":         "1m",
			"input_series":     input,
			"promql_expr_test": []exprTest{{Expr: expr, EvalTime: "20m", ExpSamples: exp}},
		}}}
		b, err := yaml.Marshal(doc)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, "t.yaml"), b, 0o644); err != nil {
			return "", err
		}
		cmd := exec.CommandContext(t.Context(), promtool, "test", "rules", "t.yaml")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run(nil)
	var r result
	if err == nil {
		return r, nil // nothing, as expected
	}
	_, got, ok := strings.Cut(out, "\n        got: ")
	if !ok {
		return r, fmt.Errorf("promtool test rules: %v\n%s", err, out)
	}
	got, _, _ = strings.Cut(got, "\n")
	if r, err = parseSamples(got); err != nil {
		return r, fmt.Errorf("promtool's %q: %w", got, err)
	}
	var exp []expSample
	for _, row := range r.rows {
		var ls []string
		for _, l := range row.labels {
			ls = append(ls, l[0]+"="+strconv.Quote(l[1]))
		}
		exp = append(exp, expSample{Labels: "{" + strings.Join(ls, ", ") + "}", Value: row.value})
	}
	if out, err := run(exp); err != nil {
		return r, fmt.Errorf("promtool disagrees with the parse of its answer: %v\n%s", err, out)
	}
	return r, nil
}

// parseSamples parses promtool's list of samples:
// {a="x", b="y"} 1E+00, {a="z"} 2E+00
func parseSamples(s string) (result, error) {
	var r result
	for s != "" {
		if !strings.HasPrefix(s, "{") {
			return r, fmt.Errorf("want '{' at %q", s)
		}
		s = s[1:]
		var row resultRow
		for !strings.HasPrefix(s, "}") {
			name, rest, ok := strings.Cut(s, "=")
			if !ok {
				return r, fmt.Errorf("no '=' in %q", s)
			}
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return r, err
			}
			v, _ := strconv.Unquote(q)
			row.labels = append(row.labels, [2]string{name, v})
			s = strings.TrimPrefix(rest[len(q):], ", ")
		}
		s = strings.TrimPrefix(s[1:], " ")
		num, rest, _ := strings.Cut(s, ", ")
		v, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return r, err
		}
		row.value = v
		r.rows = append(r.rows, row)
		s = rest
	}
	return r, nil
}

// markdown renders r as a table: one column per label (namespace left
// out: the same everywhere), then the value.
func (r result) markdown() string {
	if len(r.rows) == 0 {
		return "(no data)\n"
	}
	cols := map[string]bool{}
	for _, row := range r.rows {
		for _, l := range row.labels {
			if l[0] != "namespace" {
				cols[l[0]] = true
			}
		}
	}
	var names []string
	for c := range cols {
		names = append(names, c)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("| " + strings.Join(append(append([]string{}, names...), "value"), " | ") + " |\n")
	b.WriteString(strings.Repeat("|---", len(names)+1) + "|\n")
	for _, row := range r.rows {
		var cells []string
		for _, c := range names {
			v := ""
			for _, l := range row.labels {
				if l[0] == c {
					v = l[1]
				}
			}
			cells = append(cells, "`"+v+"`")
		}
		cells = append(cells, strconv.FormatFloat(row.value, 'g', 4, 64))
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
}

func TestParseSamples(t *testing.T) {
	r, err := parseSamples(`{node="n1", vip="198.18.0.5/32"} 1E+00, {node="a, {b}"} 2.5E-01`)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.rows) != 2 || r.rows[0].labels[1] != [2]string{"vip", "198.18.0.5/32"} || r.rows[1].labels[0][1] != "a, {b}" || r.rows[1].value != 0.25 {
		t.Fatalf("%+v", r.rows)
	}
	if _, err := parseSamples(`node="x"} 1`); err == nil {
		t.Fatal("no error for a sample without '{'")
	}
}

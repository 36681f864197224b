package chart

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// The release that deploy/ is rendered as.
const (
	Release   = "vipstack"
	Namespace = "vipstack-system"
)

// DeployValues are the values deploy/ is rendered with, on top of the
// chart's defaults: the plain manifests create their namespace (helm
// install cannot, see values.yaml).
var DeployValues = []string{"namespace.create=true"}

// Files maps each generated file of deploy/ to the chart's templates it
// holds, in the order helm renders them. deploy/vipstack.yaml holds all of
// them; deploy/examples.yaml is written by hand.
var Files = map[string][]string{
	"crds.yaml":       {"templates/crds.yaml"},
	"rbac.yaml":       {"templates/namespace.yaml", "templates/serviceaccounts.yaml", "templates/rbac.yaml"},
	"controller.yaml": {"templates/controller.yaml"},
	"agent.yaml":      {"templates/agent.yaml"},
}

// AllInOne is the deploy/ file with every object, for one kubectl apply.
const AllInOne = "vipstack.yaml"

// Header starts every generated file of deploy/.
const Header = "# Generated from charts/vipstack by `go run ./hack/gendeploy`; do not edit.\n"

// Root returns the module's root: the first directory from dir upwards
// holding go.mod and charts/vipstack.
func Root(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "charts", "vipstack", "Chart.yaml")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no charts/vipstack/Chart.yaml in %s or above", dir)
		}
	}
}

// FindHelm returns the helm binary: $VIPSTACK_HELM if set, else the one
// hack/helm-binary.sh under root builds (or has cached).
func FindHelm(ctx context.Context, root string) (string, error) {
	if h := os.Getenv("VIPSTACK_HELM"); h != "" {
		return h, nil
	}
	script := filepath.Join(root, "hack", "helm-binary.sh")
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, script)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w\n%s", script, err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// Helm runs the helm binary on the chart.
type Helm struct {
	Bin   string // the helm binary
	Chart string // the chart's directory
}

// Template renders the chart as release Release in namespace with the
// given --set values.
func (h Helm) Template(ctx context.Context, namespace string, set ...string) ([]byte, error) {
	args := []string{"template", Release, h.Chart, "--namespace", namespace}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return h.Run(ctx, args...)
}

// Lint runs helm lint --strict on the chart with the given --set values.
func (h Helm) Lint(ctx context.Context, set ...string) ([]byte, error) {
	args := []string{"lint", "--strict", h.Chart}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return h.Run(ctx, args...)
}

// Run runs helm with args (helm install, upgrade, uninstall...) and
// returns its output; an error carries helm's message.
func (h Helm) Run(ctx context.Context, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, h.Bin, args...)
	// No repositories, plugins or registry logins of the user's.
	tmp, err := os.MkdirTemp("", "vipstack-helm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(tmp, "config"),
		"HELM_CACHE_HOME="+filepath.Join(tmp, "cache"), "HELM_DATA_HOME="+filepath.Join(tmp, "data"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		return stdout.Bytes(), fmt.Errorf("helm %s: %w: %s", args[0], err, msg)
	}
	return stdout.Bytes(), nil
}

// sourceLine starts each document of helm template's output.
var sourceLine = regexp.MustCompile(`(?m)^---\n# Source: [^/\n]+/(\S+)\n`)

// Document is one object of helm template's output.
type Document struct {
	Template string // its template, e.g. templates/agent.yaml
	Text     string // the YAML, the template's comments included
}

// Split cuts helm template's output into its documents.
func Split(rendered []byte) ([]Document, error) {
	s := string(rendered)
	locs := sourceLine.FindAllStringSubmatchIndex(s, -1)
	if len(locs) == 0 {
		if strings.TrimSpace(s) == "" {
			return nil, nil
		}
		return nil, errors.New("helm template output has no '# Source:' line")
	}
	if pre := strings.TrimSpace(s[:locs[0][0]]); pre != "" {
		return nil, fmt.Errorf("helm template output starts with %q before its first document", pre)
	}
	var docs []Document
	for i, l := range locs {
		end := len(s)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		text := strings.TrimSpace(s[l[1]:end])
		if text == "" {
			continue
		}
		docs = append(docs, Document{Template: s[l[2]:l[3]], Text: text + "\n"})
	}
	return docs, nil
}

// DeployFiles returns the generated files of deploy/, by name, from helm
// template's output. A rendered template that no file holds is an error:
// Files must name it.
func DeployFiles(rendered []byte) (map[string][]byte, error) {
	docs, err := Split(rendered)
	if err != nil {
		return nil, err
	}
	fileOf := map[string]string{}
	for f, tpls := range Files {
		for _, t := range tpls {
			fileOf[t] = f
		}
	}
	var all []string
	for _, d := range docs {
		if _, ok := fileOf[d.Template]; !ok {
			return nil, fmt.Errorf("%s renders objects that no file of deploy/ holds; add it to chart.Files", d.Template)
		}
		all = append(all, d.Text)
	}
	out := map[string][]byte{}
	for f := range Files {
		// Within a file, the templates' order in Files; helm orders the
		// documents by kind, which keeps the Namespace first.
		order := map[string]int{}
		for i, t := range Files[f] {
			order[t] = i
		}
		var ds []Document
		for _, d := range docs {
			if fileOf[d.Template] == f {
				ds = append(ds, d)
			}
		}
		if len(ds) == 0 {
			return nil, fmt.Errorf("deploy/%s would be empty: none of %v renders an object", f, Files[f])
		}
		sort.SliceStable(ds, func(i, j int) bool { return order[ds[i].Template] < order[ds[j].Template] })
		var texts []string
		for _, d := range ds {
			texts = append(texts, d.Text)
		}
		out[f] = join(texts)
	}
	out[AllInOne] = join(all)
	return out, nil
}

func join(docs []string) []byte {
	return []byte(Header + "---\n" + strings.Join(docs, "---\n"))
}

// RulesFile is the deploy/ file with the chart's alerts as a plain
// Prometheus rule file (for rule_files, without the Prometheus Operator),
// rendered with RulesValues on top of DeployValues. deploy/vipstack.yaml
// does not hold it: the PrometheusRule needs the operator's CRDs.
const RulesFile = "prometheus-rules.yaml"

// RulesValues turn the PrometheusRule on.
var RulesValues = []string{"monitoring.prometheusRule.enabled=true"}

// PlainRules returns RulesFile's content from helm template's output with
// RulesValues: the PrometheusRule's spec, which is a rule file.
func PlainRules(rendered []byte) ([]byte, error) {
	docs, err := Split(rendered)
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		if d.Template != "templates/prometheusrule.yaml" {
			continue
		}
		_, spec, ok := strings.Cut(d.Text, "\nspec:\n")
		if !ok {
			return nil, errors.New("templates/prometheusrule.yaml renders no spec")
		}
		var b strings.Builder
		b.WriteString(strings.TrimSuffix(Header, "\n") + "\n# Prometheus rule_files form of the chart's PrometheusRule (namespace " + Namespace + ").\n")
		for _, line := range strings.SplitAfter(spec, "\n") {
			if line != "" && !strings.HasPrefix(line, "  ") && line != "\n" {
				return nil, fmt.Errorf("templates/prometheusrule.yaml: spec line %q is not indented", line)
			}
			b.WriteString(strings.TrimPrefix(line, "  "))
		}
		return []byte(b.String()), nil
	}
	return nil, errors.New("helm template rendered no templates/prometheusrule.yaml")
}

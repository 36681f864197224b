// Command gendeploy writes the plain manifests of deploy/ from the Helm
// chart charts/vipstack: helm template with the release name and namespace
// of package chart, split into crds.yaml, rbac.yaml, controller.yaml,
// agent.yaml and the all-in-one vipstack.yaml, and the alerts as a plain
// Prometheus rule file, prometheus-rules.yaml. deploy/examples.yaml is
// written by hand and left alone.
//
//	go run ./hack/gendeploy            regenerate deploy/
//	go run ./hack/gendeploy -out DIR   write the files into DIR instead
//
// helm comes from hack/helm-binary.sh (or $VIPSTACK_HELM).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/vipstack/vipstack/internal/chart"
)

func main() {
	out := flag.String("out", "", "directory to write the files into; empty: deploy/ of the module")
	flag.Parse()
	if err := run(context.Background(), *out); err != nil {
		fmt.Fprintf(os.Stderr, "gendeploy: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out string) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	root, err := chart.Root(wd)
	if err != nil {
		return err
	}
	if out == "" {
		out = filepath.Join(root, "deploy")
	}
	bin, err := chart.FindHelm(ctx, root)
	if err != nil {
		return err
	}
	h := chart.Helm{Bin: bin, Chart: filepath.Join(root, "charts", "vipstack")}
	rendered, err := h.Template(ctx, chart.Namespace, chart.DeployValues...)
	if err != nil {
		return err
	}
	files, err := chart.DeployFiles(rendered)
	if err != nil {
		return err
	}
	withRules, err := h.Template(ctx, chart.Namespace, append(append([]string{}, chart.DeployValues...), chart.RulesValues...)...)
	if err != nil {
		return err
	}
	if files[chart.RulesFile], err = chart.PlainRules(withRules); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(out, n), files[n], 0o644); err != nil {
			return err
		}
		fmt.Println(filepath.Join(out, n))
	}
	return nil
}

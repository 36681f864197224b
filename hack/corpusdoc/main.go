// Command corpusdoc runs the configuration corpus checker
// (../shared/corpus/run.sh) and prints the figures issue 27 sets targets
// for: keepalived.conf files without `virtual_server`, haproxy.cfg files
// overall and the Kubernetes/OpenShift API balancers among them, and
// Corefiles with stock plugins only. With -markdown it writes them into the
// corpus block of docs/benchmarks.md.
//
//	go run ./hack/corpusdoc [-corpus DIR] [-vipstack BIN] [-markdown docs/benchmarks.md]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/vipstack/vipstack/internal/benchdoc"

	"github.com/vipstack/vipstack/hack/internal/results"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("corpusdoc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	corpus := fs.String("corpus", "../shared/corpus", "the corpus `directory` (holds run.sh)")
	bin := fs.String("vipstack", "", "vipstack binary to check with (default: run.sh builds ./cmd/vipstack)")
	markdown := fs.String("markdown", "", "write the figures into the corpus block of this Markdown `file`")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	facts := benchdoc.Collect("./hack/corpusdoc", args,
		firstWords(benchdoc.FirstLine("keepalived", "--version"), 2), firstWords(benchdoc.FirstLine("haproxy", "-v"), 3))
	tmp, err := os.CreateTemp("", "corpusdoc-*.tsv")
	if err != nil {
		fmt.Fprintln(stderr, "corpusdoc:", err)
		return 1
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmdArgs := []string{filepath.Join(*corpus, "run.sh")}
	if *bin != "" {
		cmdArgs = append(cmdArgs, *bin)
	}
	cmd := exec.Command("sh", cmdArgs...)
	cmd.Env = append(os.Environ(), "RESULTS="+tmp.Name())
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(stderr, "corpusdoc: %s: %v\n", cmdArgs[0], err)
		return 1
	}
	rows, err := readResults(tmp.Name())
	if err != nil {
		fmt.Fprintln(stderr, "corpusdoc:", err)
		return 1
	}
	if len(rows) == 0 {
		fmt.Fprintf(stderr, "corpusdoc: %s wrote no results\n", cmdArgs[0])
		return 1
	}
	rep := report(figures(rows, func(file string) string {
		b, _ := os.ReadFile(filepath.Join(*corpus, file))
		return string(b)
	}))
	_ = rep.Text(stdout)
	if *markdown != "" {
		if err := benchdoc.Write(*markdown, "corpus", facts, rep); err != nil {
			fmt.Fprintln(stderr, "corpusdoc: -markdown:", err)
			return 1
		}
		fmt.Fprintf(stdout, "\nwrote the figures into %s\n", *markdown)
	}
	return 0
}

// result is one file's row of run.sh's RESULTS table.
type result struct {
	Kind, File       string
	UpClass, VSClass string
	Refused          string
}

func readResults(path string) ([]result, error) {
	rows, err := results.Read(path, "kind", "file", "up_class", "vs_class", "vs_refused")
	if err != nil {
		return nil, err
	}
	out := make([]result, len(rows))
	for i, r := range rows {
		out[i] = result{Kind: r["kind"], File: r["file"], UpClass: r["up_class"], VSClass: r["vs_class"], Refused: r["vs_refused"]}
	}
	return out, nil
}

// figure is one line of the table: of the files upstream accepts, how many
// vipstack accepts, against a target share.
type figure struct {
	What    string
	Up, VS  int
	Target  float64 // share of Up; 1 means every file
	Refused []string
}

var (
	virtualServer = regexp.MustCompile(`(?m)^\s*virtual_server(_group)?\b`)
	apiBalancer   = regexp.MustCompile(`:6443\b`)
)

// accepted is check.py's rule: a host-only complaint (a missing interface,
// script or host name on this machine) does not count as a refusal.
func accepted(class string) bool { return class == "accept" || class == "host-only" }

// figures computes the figures; text reads a corpus file.
func figures(rows []result, text func(file string) string) []figure {
	add := func(f *figure, r result) {
		f.Up++
		if accepted(r.VSClass) {
			f.VS++
		} else {
			f.Refused = append(f.Refused, strings.TrimSuffix(filepath.Base(r.File), ".conf"))
		}
	}
	ka := figure{What: "keepalived.conf without `virtual_server` (keepalived -t)", Target: 0.95}
	hp := figure{What: "haproxy.cfg (haproxy -c)", Target: 0.90}
	api := figure{What: "haproxy.cfg balancing a Kubernetes API (:6443)", Target: 1}
	dns := figure{What: "Corefile with stock plugins only", Target: 0.95}
	for _, r := range rows {
		switch r.Kind {
		case "keepalived":
			if accepted(r.UpClass) && !virtualServer.MatchString(text(r.File)) {
				add(&ka, r)
			}
		case "haproxy":
			if accepted(r.UpClass) {
				add(&hp, r)
				if apiBalancer.MatchString(text(r.File)) {
					add(&api, r)
				}
			}
		case "corefile":
			// No Corefile checker is installed: check.py calls a Corefile
			// accepted upstream when every plugin it names is stock.
			if r.UpClass == "accept" {
				add(&dns, r)
			}
		}
	}
	return []figure{ka, hp, api, dns}
}

func report(figs []figure) *benchdoc.Report {
	rep := &benchdoc.Report{}
	tb := benchdoc.Table{Header: []string{"files", "upstream accepts", "vipstack accepts", "target", "result"}}
	var refused []string
	for _, f := range figs {
		share := 0.0
		if f.Up > 0 {
			share = float64(f.VS) / float64(f.Up)
		}
		target := fmt.Sprintf("%.0f%%", 100*f.Target)
		if f.Target == 1 {
			target = "every one"
		}
		result := "PASS"
		if share < f.Target {
			result = "MISS"
		}
		tb.Add(f.What, fmt.Sprint(f.Up), fmt.Sprintf("%d (%.0f%%)", f.VS, 100*share), target, result)
		if len(f.Refused) > 0 && f.Target == 1 {
			refused = append(refused, f.What+", refused: "+strings.Join(f.Refused, ", "))
		}
	}
	rep.Table(tb)
	rep.List(refused)
	return rep
}

// firstWords keeps the first n words of a version line.
func firstWords(s string, n int) string {
	f := strings.Fields(s)
	return strings.Join(f[:min(n, len(f))], " ")
}

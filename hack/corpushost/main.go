// Command corpushost re-checks configuration corpus files that the
// upstream checkers and vipstack refuse here only because this host lacks
// what the files name, with those provided (see hack/internal/hostcheck):
// haproxy.cfg files with haproxy -c and vipstack lb --check, Corefiles with
// stock CoreDNS and vipstack dns -check.
//
// It prints one line per file: the names and files provided, both
// results, and vipstack's first error where they differ. Run as root.
//
//	go run ./hack/corpushost -vipstack BIN -results RESULTS.tsv [-kind haproxy|corefile] [-coredns BIN] [FILE...]
//
// RESULTS.tsv is run.sh's per-file table (RESULTS=FILE run.sh): the
// haproxy files checked are those upstream refused for this host only
// (host-only), the Corefiles those naming stock plugins only. FILE
// arguments (relative to -corpus) check those files instead.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/vipstack/vipstack/hack/internal/hostcheck"
	"github.com/vipstack/vipstack/hack/internal/results"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type options struct {
	corpus, results, vipstack, haproxy, coredns, kind string
	jobs                                              int
	files                                             []string
}

func run(args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("corpushost", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.corpus, "corpus", "../shared/corpus", "the corpus `directory`")
	fs.StringVar(&o.results, "results", "", "run.sh's per-file results (RESULTS=FILE run.sh) choosing the files")
	fs.StringVar(&o.vipstack, "vipstack", "", "vipstack `binary` (required)")
	fs.StringVar(&o.haproxy, "haproxy", "haproxy", "haproxy `binary`")
	fs.StringVar(&o.coredns, "coredns", "", "stock CoreDNS `binary` (default: build it as bench/node does)")
	fs.StringVar(&o.kind, "kind", "", "only this kind: haproxy or corefile")
	fs.IntVar(&o.jobs, "jobs", 2, "files checked at once")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o.files = fs.Args()
	if err := o.run(stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "corpushost:", err)
		return 1
	}
	return 0
}

func (o *options) run(stdout, stderr io.Writer) error {
	if o.vipstack == "" {
		return fmt.Errorf("-vipstack is required")
	}
	jobs, err := o.jobList()
	if err != nil {
		return err
	}
	c := hostcheck.Checker{Corpus: o.corpus, Vipstack: o.vipstack, Haproxy: o.haproxy, CoreDNS: o.coredns, Jobs: o.jobs}
	res, err := c.Check(jobs, stderr)
	if err != nil {
		return err
	}
	printReport(stdout, res)
	return nil
}

// jobList is the files to check: the arguments, or the rows of -results.
func (o *options) jobList() ([]hostcheck.Job, error) {
	var jobs []hostcheck.Job
	want := func(k string) bool { return o.kind == "" || o.kind == k }
	if len(o.files) > 0 {
		for _, f := range o.files {
			k := "haproxy"
			if strings.HasPrefix(f, "corefile/") {
				k = "corefile"
			}
			if want(k) {
				jobs = append(jobs, hostcheck.Job{Kind: k, File: f})
			}
		}
		return jobs, nil
	}
	if o.results == "" {
		return nil, fmt.Errorf("give -results RESULTS.tsv (from RESULTS=FILE run.sh) or files")
	}
	rows, err := readResults(o.results)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if hostcheck.Chosen(r.Kind, r.UpClass) && want(r.Kind) {
			jobs = append(jobs, hostcheck.Job{Kind: r.Kind, File: r.File})
		}
	}
	return jobs, nil
}

// result is one file's row of run.sh's RESULTS table.
type result struct{ Kind, File, UpClass string }

func readResults(path string) ([]result, error) {
	rows, err := results.Read(path, "kind", "file", "up_class")
	if err != nil {
		return nil, err
	}
	out := make([]result, len(rows))
	for i, r := range rows {
		out[i] = result{Kind: r["kind"], File: r["file"], UpClass: r["up_class"]}
	}
	return out, nil
}

func printReport(w io.Writer, vs []hostcheck.Verdict) {
	counts := map[string]map[string]int{}
	for _, v := range vs {
		if v.Err != nil {
			fmt.Fprintf(w, "%s\terror: %v\n", v.File, v.Err)
			continue
		}
		line := fmt.Sprintf("%s\tnames %d, files %d\tupstream %s\tvipstack %s", v.File, len(v.Hosts), len(v.Provided), v.Up.Class, v.VS.Class)
		if v.Up.Class != "accept" {
			line += "\tupstream: " + clip(v.Up.Msg)
		}
		if v.VS.Class != v.Up.Class || v.VS.Class != "accept" {
			line += "\tvipstack: " + clip(v.VS.Msg)
		}
		fmt.Fprintln(w, line)
		if counts[v.Kind] == nil {
			counts[v.Kind] = map[string]int{}
		}
		counts[v.Kind]["files"]++
		counts[v.Kind]["up "+v.Up.Class]++
		if v.VS.Class == "accept" {
			counts[v.Kind]["vs "+v.Up.Class]++
		}
	}
	for _, k := range []string{"haproxy", "corefile"} {
		c := counts[k]
		if c == nil {
			continue
		}
		fmt.Fprintf(w, "%s: %d files; upstream accepts %d, vipstack %d of them; upstream refuses %d for this host only (vipstack accepts %d) and %d outright (vipstack accepts %d)\n",
			k, c["files"], c["up accept"], c["vs accept"], c["up host-only"], c["vs host-only"], c["up reject"], c["vs reject"])
	}
}

// clip shortens a message to one table cell.
func clip(s string) string {
	s = strings.ReplaceAll(s, "\t", " ")
	if len(s) > 240 {
		s = s[:240] + "..."
	}
	return s
}

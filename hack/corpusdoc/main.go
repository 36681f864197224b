// Command corpusdoc runs the configuration corpus checker
// (../shared/corpus/run.sh) and prints the figures issue 27 sets targets
// for: keepalived.conf files without `virtual_server`, haproxy.cfg files
// overall and the Kubernetes/OpenShift API balancers among them, and
// Corefiles with stock plugins only. Then (by default when root; -hosts=false
// skips it) it re-checks the haproxy.cfg files refused for this host only and
// the stock-plugin Corefiles with what they name provided
// (hack/internal/hostcheck; stock CoreDNS is the Corefile checker), and takes
// the verdicts from those figures. With -markdown it writes them into the
// corpus block of docs/benchmarks.md.
//
//	go run ./hack/corpusdoc [-corpus DIR] [-vipstack BIN] [-hosts=false] [-coredns BIN] [-markdown docs/benchmarks.md]
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/vipstack/vipstack/internal/benchdoc"

	"github.com/vipstack/vipstack/hack/internal/hostcheck"
	"github.com/vipstack/vipstack/hack/internal/results"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type options struct {
	corpus, vipstack, coredns, markdown string
	hosts                               bool
}

func run(args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("corpusdoc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.corpus, "corpus", "../shared/corpus", "the corpus `directory` (holds run.sh)")
	fs.StringVar(&o.vipstack, "vipstack", "", "vipstack `binary` to check with (default: build ./cmd/vipstack)")
	fs.BoolVar(&o.hosts, "hosts", os.Geteuid() == 0, "re-check the files with what they name provided (needs root)")
	fs.StringVar(&o.coredns, "coredns", "", "stock CoreDNS `binary` for -hosts (default: build it as bench/node does)")
	fs.StringVar(&o.markdown, "markdown", "", "write the figures into the corpus block of this Markdown `file`")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "corpusdoc: unexpected argument %q (it takes flags only)\n", fs.Arg(0))
		return 2
	}
	hostsSet := false
	fs.Visit(func(f *flag.Flag) { hostsSet = hostsSet || f.Name == "hosts" })
	if err := o.run(args, hostsSet, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "corpusdoc:", err)
		return 1
	}
	return 0
}

func (o *options) run(args []string, hostsSet bool, stdout, stderr io.Writer) error {
	skipped := ""
	if !o.hosts {
		skipped = "-hosts=false"
		if !hostsSet {
			skipped = fmt.Sprintf("not root (uid %d)", os.Geteuid())
		}
	} else if err := hostcheck.Ready(); err != nil {
		if hostsSet {
			return fmt.Errorf("-hosts: %w", err)
		}
		skipped = err.Error()
	}
	if skipped != "" {
		fmt.Fprintf(stderr, "corpusdoc: not re-checking with what the files name provided: %s\n", skipped)
	}
	peers := []string{firstWords(benchdoc.FirstLine("keepalived", "--version"), 2), firstWords(benchdoc.FirstLine("haproxy", "-v"), 3)}
	if skipped == "" {
		peers = append(peers, benchdoc.FirstLine("go", "list", "-m", "-f", "stock CoreDNS {{.Version}}", "github.com/coredns/coredns"))
	}
	facts := benchdoc.Collect("./hack/corpusdoc", args, peers...)
	tmp, err := os.MkdirTemp("", "corpusdoc-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if o.vipstack == "" {
		o.vipstack = filepath.Join(tmp, "vipstack")
		if out, err := exec.Command("go", "build", "-o", o.vipstack, "./cmd/vipstack").CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/vipstack (run from the project root, or give -vipstack): %v\n%s", err, out)
		}
	}
	rows, err := o.runSh(filepath.Join(tmp, "results.tsv"), stderr)
	if err != nil {
		return err
	}
	var checked map[string]hostcheck.Verdict
	if skipped == "" {
		if checked, err = o.recheck(rows, stderr); err != nil {
			return err
		}
	}
	rep := report(figures(rows, func(file string) string {
		b, _ := os.ReadFile(filepath.Join(o.corpus, file))
		return string(b)
	}, checked), skipped)
	_ = rep.Text(stdout)
	if o.markdown != "" {
		if err := benchdoc.Write(o.markdown, "corpus", facts, rep); err != nil {
			return fmt.Errorf("-markdown: %w", err)
		}
		fmt.Fprintf(stdout, "\nwrote the figures into %s\n", o.markdown)
	}
	return nil
}

// runSh runs run.sh with vipstack, its per-file table into path.
func (o *options) runSh(path string, stderr io.Writer) ([]result, error) {
	script := filepath.Join(o.corpus, "run.sh")
	cmd := exec.Command("sh", script, o.vipstack)
	cmd.Env = append(os.Environ(), "RESULTS="+path)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w", script, err)
	}
	rows, err := readResults(path)
	if err != nil {
		return nil, fmt.Errorf("%s's results: %w", script, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s wrote no results", script)
	}
	return rows, nil
}

// recheck checks the files hostcheck.Chosen picks with what they name
// provided; any file it could not check is an error.
func (o *options) recheck(rows []result, stderr io.Writer) (map[string]hostcheck.Verdict, error) {
	var jobs []hostcheck.Job
	for _, r := range rows {
		if hostcheck.Chosen(r.Kind, r.UpClass) {
			jobs = append(jobs, hostcheck.Job{Kind: r.Kind, File: r.File})
		}
	}
	fmt.Fprintf(stderr, "corpusdoc: re-checking %d files with what they name provided\n", len(jobs))
	c := hostcheck.Checker{Corpus: o.corpus, Vipstack: o.vipstack, CoreDNS: o.coredns, Jobs: 2}
	vs, err := c.Check(jobs, stderr)
	if err != nil {
		return nil, err
	}
	out := make(map[string]hostcheck.Verdict, len(vs))
	var errs []error
	for _, v := range vs {
		if v.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", v.File, v.Err))
		}
		out[v.File] = v
	}
	return out, errors.Join(errs...)
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

// firstWords keeps the first n words of a version line.
func firstWords(s string, n int) string {
	f := strings.Fields(s)
	return strings.Join(f[:min(n, len(f))], " ")
}

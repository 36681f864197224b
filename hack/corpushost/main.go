// Command corpushost re-checks configuration corpus files that the
// upstream checkers and vipstack refuse here only because this host lacks
// what the files name (a host name that does not resolve, a certificate or
// error file that does not exist), with those provided: each check runs in
// its own mount and network namespace (unshare -m -n), chrooted into an
// overlay of / whose /etc/hosts maps every host name the file names to an
// address of 198.18.0.0/15, and which holds a self-signed certificate, a
// crt-list, an error file or an empty file at each missing path the file
// names. The host's own /etc/hosts and file tree are never written.
//
// For haproxy.cfg files it runs `haproxy -c -f FILE` and `vipstack lb -f
// FILE --check`, as ../shared/corpus/run.sh does. For Corefiles it is the
// upstream checker the corpus lacks: it starts stock CoreDNS (the release
// build bench/node uses) on the file, which accepts it when it prints its
// version banner after starting every server, and rejects it when it exits
// first; and it runs `vipstack dns -conf FILE -check`.
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
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/vipstack/vipstack/internal/peers"

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

// job is one corpus file to check.
type job struct{ Kind, File string }

func (o *options) run(stdout, stderr io.Writer) error {
	if o.vipstack == "" {
		return fmt.Errorf("-vipstack is required")
	}
	jobs, err := o.jobList()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "corpushost-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if o.vipstack, err = absBinary(o.vipstack); err != nil {
		return err
	}
	if o.haproxy, err = absBinary(o.haproxy); err != nil {
		return err
	}
	for _, j := range jobs {
		if j.Kind == "corefile" && o.coredns == "" {
			fmt.Fprintln(stderr, "corpushost: building stock CoreDNS (peers.BuildReleaseCoreDNS)")
			if o.coredns, err = peers.BuildReleaseCoreDNS(context.Background(), tmp); err != nil {
				return err
			}
			break
		}
	}
	if o.coredns != "" {
		if o.coredns, err = absBinary(o.coredns); err != nil {
			return err
		}
	}
	c, err := newCert()
	if err != nil {
		return err
	}
	res := make([]verdict, len(jobs))
	sem := make(chan struct{}, max(o.jobs, 1))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			res[i] = o.check(tmp, j, c)
		}()
	}
	wg.Wait()
	printReport(stdout, res)
	return nil
}

func absBinary(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", err
	}
	return filepath.Abs(p)
}

// jobList is the files to check: the arguments, or the rows of -results.
func (o *options) jobList() ([]job, error) {
	var jobs []job
	want := func(k string) bool { return o.kind == "" || o.kind == k }
	if len(o.files) > 0 {
		for _, f := range o.files {
			k := "haproxy"
			if strings.HasPrefix(f, "corefile/") {
				k = "corefile"
			}
			if want(k) {
				jobs = append(jobs, job{k, f})
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
		if (r.Kind == "haproxy" && r.UpClass == "host-only" || r.Kind == "corefile" && r.UpClass == "accept") && want(r.Kind) {
			jobs = append(jobs, job{r.Kind, r.File})
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

// verdict is one file's outcome.
type verdict struct {
	job
	Hosts, Provided []string
	Up, VS          outcome
	Err             error
}

// outcome is one checker's result on a file.
type outcome struct {
	Class string // accept, host-only or reject
	Msg   string // the first error (reject, host-only) or "" (accept)
}

func (o *options) check(tmp string, j job, c cert) verdict {
	v := verdict{job: j}
	path, err := filepath.Abs(filepath.Join(o.corpus, j.File))
	if err != nil {
		v.Err = err
		return v
	}
	text, err := os.ReadFile(path)
	if err != nil {
		v.Err = err
		return v
	}
	n := haproxyNeeds(string(text))
	if j.Kind == "corefile" {
		n = corefileNeeds(string(text))
	}
	v.Hosts = n.Hosts
	dir, made, err := prepare(tmp, n, c)
	if err != nil {
		v.Err = err
		return v
	}
	v.Provided = made
	if j.Kind == "corefile" {
		var env []string
		if n.InCluster {
			env = inClusterEnv
		}
		v.Up, v.VS, v.Err = o.checkCorefile(dir, env, path)
		return v
	}
	rc, out := runOnce(dir, nil, 30*time.Second, o.haproxy, "-c", "-f", path)
	v.Up = haproxyOutcome(rc, out)
	rc, out = runOnce(dir, nil, 30*time.Second, o.vipstack, "lb", "-f", path, "--check")
	v.VS = vipstackOutcome(rc, out)
	return v
}

// coreDNSLimit bounds a stock CoreDNS start: the kubernetes plugin waits
// up to 5 s for an API server before it starts serving without one.
const coreDNSLimit = 12 * time.Second

func (o *options) checkCorefile(dir string, env []string, path string) (up, vs outcome, err error) {
	sr, err := serve(dir, env, coreDNSLimit, func(l string) bool { return strings.HasPrefix(l, "CoreDNS-") },
		o.coredns, "-conf", path)
	if err != nil {
		return up, vs, err
	}
	up = coreDNSOutcome(sr)
	rc, out := runOnce(dir, env, 30*time.Second, o.vipstack, "dns", "-conf", path, "-check")
	return up, vipstackOutcome(rc, out), nil
}

// hostOnly matches complaints about this host only: a name that does not
// resolve, a path that does not exist, an address not on this host.
var hostOnly = regexp.MustCompile(`could not resolve address|invalid address: '[A-Za-z]|no such host|failed to resolve|` +
	`[Nn]o such file or directory|cannot open file|unable to stat|File to import not found|cannot assign requested address|unknown (user|group)`)

var haproxyPos = regexp.MustCompile(`^\[ALERT\]\s+\(\d+\) : (config : )?`)

// haproxyOutcome classifies haproxy -c's result: exit 0 is accept (haproxy
// exits 0 with warnings); otherwise its first alert but the closing
// summaries.
func haproxyOutcome(rc int, out string) outcome {
	if rc == 0 {
		return outcome{Class: "accept"}
	}
	msg := fmt.Sprintf("exit %d", rc)
	for _, l := range strings.Split(out, "\n") {
		if !strings.Contains(l, "[ALERT]") || strings.Contains(l, "Fatal errors found") || strings.Contains(l, "Error(s) found") {
			continue
		}
		msg = strings.TrimSpace(haproxyPos.ReplaceAllString(l, ""))
		break
	}
	return classify(msg)
}

// coreDNSOutcome classifies a stock CoreDNS start: its banner is accept;
// exiting first is reject (or host-only), with its last line; still
// running at the limit without a banner is accept, marked so.
func coreDNSOutcome(sr serveResult) outcome {
	if sr.Started {
		return outcome{Class: "accept"}
	}
	if !sr.Exited {
		return outcome{Class: "accept", Msg: "running after " + coreDNSLimit.String() + " without its banner"}
	}
	lines := strings.Split(strings.TrimSpace(sr.Out), "\n")
	msg := fmt.Sprintf("exit %d", sr.Code)
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			msg = l
			break
		}
	}
	return classify(msg)
}

// vipstackOutcome classifies vipstack's --check: exit 0 is accept;
// otherwise its first line that is no warning.
func vipstackOutcome(rc int, out string) outcome {
	if rc == 0 {
		return outcome{Class: "accept"}
	}
	msg := fmt.Sprintf("exit %d", rc)
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "warning:") || strings.Contains(l, "[WARNING]") || strings.Contains(l, "[INFO]") {
			continue
		}
		msg = l
		break
	}
	return classify(msg)
}

func classify(msg string) outcome {
	if hostOnly.MatchString(msg) {
		return outcome{Class: "host-only", Msg: msg}
	}
	return outcome{Class: "reject", Msg: msg}
}

func printReport(w io.Writer, vs []verdict) {
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

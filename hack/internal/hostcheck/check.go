package hostcheck

import (
	"context"
	"errors"
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
)

// Checker checks corpus files with what they name provided.
type Checker struct {
	Corpus   string // the corpus directory the files are relative to
	Vipstack string // vipstack binary (required)
	Haproxy  string // haproxy binary ("" is haproxy on $PATH)
	CoreDNS  string // stock CoreDNS binary ("" builds it as bench/node does)
	Jobs     int    // files checked at once (at least 1)
}

// Job is one corpus file to check: its kind (haproxy or corefile) and its
// path relative to the corpus.
type Job struct{ Kind, File string }

// Chosen says whether a file of run.sh's RESULTS table is re-checked: the
// haproxy.cfg upstream refused for this host only (host-only) and the
// Corefiles naming stock plugins only (up_class accept).
func Chosen(kind, upClass string) bool {
	return kind == "haproxy" && upClass == "host-only" || kind == "corefile" && upClass == "accept"
}

// Verdict is one file's outcome.
type Verdict struct {
	Job
	Hosts, Provided []string
	Up, VS          Outcome
	Err             error
}

// Outcome is one checker's result on a file.
type Outcome struct {
	Class string // accept, host-only or reject
	Msg   string // the first error (reject, host-only) or "" (accept)
}

// Ready says what this host lacks to run the checks, or nil: root, and
// the unshare, mount, chroot and ip commands.
func Ready() error {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, fmt.Sprintf("root (running as uid %d)", os.Geteuid()))
	}
	for _, c := range []string{"unshare", "mount", "chroot", "ip"} {
		if _, err := exec.LookPath(c); err != nil {
			missing = append(missing, "the "+c+" command")
		}
	}
	if len(missing) > 0 {
		return errors.New("checking with what the files name provided needs " + strings.Join(missing, ", "))
	}
	return nil
}

// Check checks jobs and returns their verdicts in the same order; log gets
// progress (building CoreDNS).
func (c Checker) Check(jobs []Job, log io.Writer) ([]Verdict, error) {
	if c.Vipstack == "" {
		return nil, fmt.Errorf("no vipstack binary given")
	}
	if c.Haproxy == "" {
		c.Haproxy = "haproxy"
	}
	tmp, err := os.MkdirTemp("", "corpushost-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if c.Vipstack, err = absBinary(c.Vipstack); err != nil {
		return nil, err
	}
	if c.Haproxy, err = absBinary(c.Haproxy); err != nil {
		return nil, err
	}
	if err := c.findCoreDNS(jobs, tmp, log); err != nil {
		return nil, err
	}
	crt, err := newCert()
	if err != nil {
		return nil, err
	}
	res := make([]Verdict, len(jobs))
	sem := make(chan struct{}, max(c.Jobs, 1))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			res[i] = c.check(tmp, j, crt)
		}()
	}
	wg.Wait()
	return res, nil
}

// findCoreDNS builds stock CoreDNS into tmp when a Corefile is to be
// checked and none is given.
func (c *Checker) findCoreDNS(jobs []Job, tmp string, log io.Writer) error {
	var err error
	for _, j := range jobs {
		if j.Kind == "corefile" && c.CoreDNS == "" {
			fmt.Fprintln(log, "building stock CoreDNS (peers.BuildReleaseCoreDNS)")
			if c.CoreDNS, err = peers.BuildReleaseCoreDNS(context.Background(), tmp); err != nil {
				return err
			}
			break
		}
	}
	if c.CoreDNS != "" {
		c.CoreDNS, err = absBinary(c.CoreDNS)
	}
	return err
}

func absBinary(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", err
	}
	return filepath.Abs(p)
}
func (o Checker) check(tmp string, j Job, c cert) Verdict {
	v := Verdict{Job: j}
	path, err := filepath.Abs(filepath.Join(o.Corpus, j.File))
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
	rc, out := runOnce(dir, nil, 30*time.Second, o.Haproxy, "-c", "-f", path)
	v.Up = haproxyOutcome(rc, out)
	rc, out = runOnce(dir, nil, 30*time.Second, o.Vipstack, "lb", "-f", path, "--check")
	v.VS = vipstackOutcome(rc, out)
	return v
}

// coreDNSLimit bounds a stock CoreDNS start: the kubernetes plugin waits
// up to 5 s for an API server before it starts serving without one.
const coreDNSLimit = 12 * time.Second

func (o Checker) checkCorefile(dir string, env []string, path string) (up, vs Outcome, err error) {
	sr, err := serve(dir, env, coreDNSLimit, func(l string) bool { return strings.HasPrefix(l, "CoreDNS-") },
		o.CoreDNS, "-conf", path)
	if err != nil {
		return up, vs, err
	}
	up = coreDNSOutcome(sr)
	rc, out := runOnce(dir, env, 30*time.Second, o.Vipstack, "dns", "-conf", path, "-check")
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
func haproxyOutcome(rc int, out string) Outcome {
	if rc == 0 {
		return Outcome{Class: "accept"}
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
func coreDNSOutcome(sr serveResult) Outcome {
	if sr.Started {
		return Outcome{Class: "accept"}
	}
	if !sr.Exited {
		return Outcome{Class: "accept", Msg: "running after " + coreDNSLimit.String() + " without its banner"}
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
func vipstackOutcome(rc int, out string) Outcome {
	if rc == 0 {
		return Outcome{Class: "accept"}
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

func classify(msg string) Outcome {
	if hostOnly.MatchString(msg) {
		return Outcome{Class: "host-only", Msg: msg}
	}
	return Outcome{Class: "reject", Msg: msg}
}

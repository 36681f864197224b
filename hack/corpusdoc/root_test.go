package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/testnet"
)

// corpusFiles are the few corpus files TestCorpusWithHosts checks: an
// OpenShift API balancer haproxy refuses here only for host names that do
// not resolve (vipstack too), a haproxy.cfg both accept, a keepalived.conf
// and a stock-plugin Corefile.
var corpusFiles = []string{
	"haproxy/037-Dineshk1205_ocp4.20.conf",
	"haproxy/003-1ambda_nebula-config.conf",
	"keepalived/001-28youth_docker-mysql-cluster.conf",
	"corefile/001-186526_net186-as112.conf",
}

// TestCorpusWithHosts runs the whole command, run.sh and the check with
// what the files name provided, on a corpus of corpusFiles copied from
// ../shared/corpus: the API balancer is refused by run.sh's measure and
// accepted by both sides with its host names provided, which makes the
// verdict PASS. Root, haproxy, keepalived and python3 only.
func TestCorpusWithHosts(t *testing.T) {
	testnet.RequireRoot(t)
	src := filepath.Join("..", "..", "..", "shared", "corpus")
	for _, c := range []string{"haproxy", "keepalived", "python3", "unshare"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s is not installed", c)
		}
	}
	if _, err := os.Stat(filepath.Join(src, "run.sh")); err != nil {
		t.Skipf("no corpus: %v", err)
	}
	dir := t.TempDir()
	corpus := filepath.Join(dir, "corpus")
	copyCorpus(t, src, corpus, corpusFiles)
	bin := filepath.Join(dir, "vipstack")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/vipstack").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	md := filepath.Join(dir, "b.md")
	if err := os.WriteFile(md, []byte("# x\n\n<!-- begin corpus: written by the bench's -markdown; do not edit -->\n<!-- end corpus -->\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	if rc := run([]string{"-corpus", corpus, "-vipstack", bin, "-hosts", "-markdown", md}, &stdout, &stderr); rc != 0 {
		t.Fatalf("exit %d\n%s\n%s", rc, stdout.String(), stderr.String())
	}
	got, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| haproxy.cfg balancing a Kubernetes API (:6443) | here (run.sh) | 1 | 0 | 0 (0%) | every one | next row |",
		"| haproxy.cfg balancing a Kubernetes API (:6443) | with what the files name provided | 1 | 1 | 1 (100%) | every one | PASS |",
		"| haproxy.cfg (haproxy -c) | with what the files name provided | 2 | 2 | 2 (100%) | 90% | PASS |",
		"| Corefile with stock plugins only | with what the files name provided | 1 | 1 | 1 (100%) | 95% | PASS |",
		"The result is taken from the rows checked with what the files name provided",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("%s lacks %q:\n%s\nstderr:\n%s", md, want, got, stderr.String())
		}
	}
}

// copyCorpus copies run.sh, check.py, the files and their INDEX.tsv rows.
func copyCorpus(t *testing.T, src, dst string, files []string) {
	t.Helper()
	idx, err := os.Open(filepath.Join(src, "INDEX.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	var keep strings.Builder
	sc := bufio.NewScanner(idx)
	for first := true; sc.Scan(); first = false {
		f := strings.SplitN(sc.Text(), "\t", 3)
		if first || len(f) > 1 && slices.Contains(files, f[1]) {
			keep.WriteString(sc.Text() + "\n")
		}
	}
	copies := map[string][]byte{"INDEX.tsv": []byte(keep.String())}
	for _, f := range append([]string{"run.sh", "check.py"}, files...) {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		copies[f] = b
	}
	for f, b := range copies {
		p := filepath.Join(dst, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

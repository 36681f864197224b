// Package metricstest checks, in tests, that what a vipstack registry
// exports follows Prometheus' naming conventions (promlint).
package metricstest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Problems returns promlint's findings on what g gathers, one line each
// ("vipstack_x: counter metrics should have \"_total\" suffix").
func Problems(g prometheus.Gatherer) ([]string, error) {
	ps, err := testutil.GatherAndLint(g)
	var out []string
	for _, p := range ps {
		out = append(out, p.Metric+": "+p.Text)
	}
	return out, err
}

// Lint fails t for every promlint finding on what g gathers, for every
// vipstack_ series docs/metrics.md does not name, and when g gathers no
// vipstack_ series beside vipstack_build_info (a lint of nothing proves
// nothing).
func Lint(t testing.TB, g prometheus.Gatherer) {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	n := 0
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), "vipstack_") && f.GetName() != "vipstack_build_info" {
			n++
		}
	}
	if n == 0 {
		t.Fatalf("the registry gathers no vipstack_ series of its own to lint")
	}
	ps, err := Problems(g)
	if err != nil {
		t.Fatalf("lint: %v", err)
	}
	for _, p := range ps {
		t.Errorf("metric name lint: %s", p)
	}
	doc, path, err := readDoc()
	if err != nil {
		t.Fatalf("metrics documentation: %v", err)
	}
	for _, f := range fams {
		if name := f.GetName(); strings.HasPrefix(name, "vipstack_") && !mentions(doc, name) {
			t.Errorf("%s is not documented in %s", name, path)
		}
	}
}

// Doc is where every vipstack_ series is documented, from the module's
// root.
const Doc = "docs/metrics.md"

// readDoc reads Doc, looking for the module's root (go.mod) from the
// working directory up.
func readDoc() (text, path string, err error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			path = filepath.Join(dir, Doc)
			b, err := os.ReadFile(path)
			return string(b), path, err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// mentions reports whether text names the series name as a whole word
// (vipstack_lb_server_up is not in vipstack_lb_server_up_total).
func mentions(text, name string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return false
		}
		end := i + j + len(name)
		startOK := i+j == 0 || !wordByte(text[i+j-1])
		if startOK && (end == len(text) || !wordByte(text[end])) {
			return true
		}
		i = end
	}
}

func wordByte(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

package metrics

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vipstack/vipstack/internal/metrics/metricstest"
	"github.com/vipstack/vipstack/internal/version"
)

// TestNewRegistry: the base every daemon serves has the build information
// with this binary's labels, the Go runtime and the process collectors,
// and passes the name lint.
func TestNewRegistry(t *testing.T) {
	reg := NewRegistry()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range fams {
		have[f.GetName()] = true
	}
	for _, name := range []string{BuildInfoName, "go_goroutines", "go_memstats_alloc_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds"} {
		if !have[name] {
			t.Errorf("NewRegistry gathers no %s", name)
		}
	}
	ps, err := metricstest.Problems(reg)
	if err != nil || len(ps) > 0 {
		t.Errorf("lint: %v %q", err, ps)
	}
}

func TestBuildInfo(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   version.Info
		want string
	}{
		{
			name: "release",
			in:   version.Info{Version: "v0.3.0", Revision: "3bdd6f3c4d0a", GoVersion: "go1.26.8"},
			want: `vipstack_build_info{goversion="go1.26.8",revision="3bdd6f3c4d0a",version="v0.3.0"} 1`,
		},
		{
			name: "modified tree",
			in:   version.Info{Version: "v0.0.0-g3bdd6f3c4d0a-dirty", Revision: "3bdd6f3c4d0a", Modified: true, GoVersion: "go1.26.8"},
			want: `vipstack_build_info{goversion="go1.26.8",revision="3bdd6f3c4d0a-dirty",version="v0.0.0-g3bdd6f3c4d0a-dirty"} 1`,
		},
		{
			name: "no revision recorded",
			in:   version.Info{Version: "v0.0.0-unknown", GoVersion: "go1.26.8"},
			want: `vipstack_build_info{goversion="go1.26.8",revision="",version="v0.0.0-unknown"} 1`,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			reg.MustRegister(BuildInfo(tt.in))
			want := "# HELP vipstack_build_info Always 1; the labels name the build: its version (vipstack version), VCS revision and Go toolchain.\n# TYPE vipstack_build_info gauge\n" + tt.want + "\n"
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want), BuildInfoName); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestMerge: families of the first gatherer win; the rest add only what
// it lacks, so the default registry's go_* is not served twice.
func TestMerge(t *testing.T) {
	a, b := prometheus.NewRegistry(), prometheus.NewRegistry()
	ga := prometheus.NewGauge(prometheus.GaugeOpts{Name: "shared", Help: "h"})
	ga.Set(1)
	gb := prometheus.NewGauge(prometheus.GaugeOpts{Name: "shared", Help: "h"})
	gb.Set(2)
	only := prometheus.NewGauge(prometheus.GaugeOpts{Name: "only_b", Help: "h"})
	only.Set(3)
	a.MustRegister(ga)
	b.MustRegister(gb, only)
	fams, err := Merge(a, b).Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		got[f.GetName()] = f.GetMetric()[0].GetGauge().GetValue()
	}
	if diff := cmp.Diff(map[string]float64{"shared": 1, "only_b": 3}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// And the default registry beside a NewRegistry lints and gathers.
	if _, err := Merge(NewRegistry(), prometheus.DefaultGatherer).Gather(); err != nil {
		t.Errorf("NewRegistry merged with the default registry: %v", err)
	}
}

// TestLintCatches: the lint every daemon's test runs fails on a counter
// without _total, a non-base unit and a camel-case name.
func TestLintCatches(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "vipstack_things_done", Help: "h"})
	ms := prometheus.NewGauge(prometheus.GaugeOpts{Name: "vipstack_wait_milliseconds", Help: "h"})
	camel := prometheus.NewGauge(prometheus.GaugeOpts{Name: "vipstack_badName", Help: "h"})
	reg.MustRegister(c, ms, camel)
	c.Inc()
	ps, err := metricstest.Problems(reg)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(ps, "\n")
	for _, want := range []string{"vipstack_things_done: counter metrics should have \"_total\" suffix", "vipstack_wait_milliseconds: use base unit", "vipstack_badName"} {
		if !strings.Contains(joined, want) {
			t.Errorf("lint findings lack %q:\n%s", want, joined)
		}
	}
	ft := &fakeT{}
	metricstest.Lint(ft, reg)
	if !ft.failed {
		t.Error("metricstest.Lint passed a registry with bad names")
	}
}

type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Errorf(string, ...any) { f.failed = true }
func (f *fakeT) Fatalf(string, ...any) { f.failed = true }

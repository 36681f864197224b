package metrics

import (
	"bytes"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
)

// series is one sample of a family for the test sources.
type series struct {
	value  float64
	labels []string // names and values in turn, names sorted
}

type family struct {
	name, typ, help string
	labels          []string // label names, sorted
	series          []series
}

// testSource writes fams.
type testSource struct{ fams []family }

func (s testSource) Families() []string {
	var names []string
	for _, f := range s.fams {
		names = append(names, f.name)
	}
	return names
}

func (s testSource) WriteText(t *Text) {
	for _, f := range s.fams {
		t.Family(f.name, f.typ, f.help)
		for _, x := range f.series {
			t.Sample(x.value, x.labels...)
		}
	}
}

// collector is the same families through client_golang's const metrics.
type collector struct{ fams []family }

func (collector) Describe(chan<- *prometheus.Desc) {}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, f := range c.fams {
		d := prometheus.NewDesc(f.name, f.help, f.labels, nil)
		vt := prometheus.GaugeValue
		if f.typ == "counter" {
			vt = prometheus.CounterValue
		}
		for _, x := range f.series {
			var values []string
			for i := 1; i < len(x.labels); i += 2 {
				values = append(values, x.labels[i])
			}
			ch <- prometheus.MustNewConstMetric(d, vt, x.value, values...)
		}
	}
}

// testFamilies need every escape of the format and every special value.
var testFamilies = []family{
	{name: "t_counter_total", typ: "counter", help: `Counts. A backslash \ and a line
break in the help; "quotes" stay.`, labels: []string{"a", "b"}, series: []series{
		{1, []string{"a", "x", "b", `quote " backslash \ newline` + "\n" + `end`}},
		{1e6, []string{"a", "y", "b", ""}},
		{12345678901, []string{"a", "z", "b", "ünïcödé"}},
	}},
	{name: "t_gauge", typ: "gauge", help: "A gauge.", series: []series{{0.5, nil}}},
	{name: "t_values", typ: "gauge", help: "Special values.", labels: []string{"v"}, series: []series{
		{0, []string{"v", "0"}}, {-1, []string{"v", "1"}}, {math.NaN(), []string{"v", "2"}},
		{math.Inf(1), []string{"v", "3"}}, {math.Inf(-1), []string{"v", "4"}}, {-2.5e-7, []string{"v", "5"}},
	}},
	{name: "t_empty", typ: "gauge", help: "No series: left out."},
}

// TestTextMatchesClientGolang: what a text source writes is byte for byte
// what client_golang's registry and encoder write for the same series,
// and Gather parses it back to the families client_golang gathers.
func TestTextMatchesClientGolang(t *testing.T) {
	plain := prometheus.NewRegistry()
	plain.MustRegister(collector{testFamilies})
	fams, err := plain.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	enc := expfmt.NewEncoder(&want, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range fams {
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
	}

	reg := &Registry{Registry: prometheus.NewRegistry()}
	reg.MustAddText(testSource{testFamilies})
	var got bytes.Buffer
	if err := reg.WriteText(&got); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want.String(), got.String()); d != "" {
		t.Errorf("WriteText differs from client_golang's (-want +got):\n%s", d)
	}
	if err := testutil.GatherAndCompare(reg, &want); err != nil {
		t.Errorf("Gather: %v", err)
	}
}

// TestCollectorOnPlainRegistry: a text source added to a registry that is
// not a Registry is collected through the adapter, with the same families.
func TestCollectorOnPlainRegistry(t *testing.T) {
	reg := &Registry{Registry: prometheus.NewRegistry()}
	AddText(reg, testSource{testFamilies})
	var want bytes.Buffer
	if err := reg.WriteText(&want); err != nil {
		t.Fatal(err)
	}
	plain := prometheus.NewRegistry()
	AddText(plain, testSource{testFamilies})
	if err := testutil.GatherAndCompare(plain, &want); err != nil {
		t.Error(err)
	}
}

// TestRegistryMixesCollectorsAndText: Gather and WriteText carry both the
// collectors' families and the text sources'; a family from both is an
// error, and a family two text sources name is refused when added.
func TestRegistryMixesCollectorsAndText(t *testing.T) {
	reg := NewRegistry()
	reg.MustAddText(testSource{testFamilies[:2]})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fams {
		if n := f.GetName(); n == BuildInfoName || strings.HasPrefix(n, "t_") {
			names = append(names, n)
		}
	}
	if d := cmp.Diff([]string{"t_counter_total", "t_gauge", BuildInfoName}, names); d != "" {
		t.Errorf("families (-want +got):\n%s", d)
	}
	var text bytes.Buffer
	if err := reg.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"# TYPE t_gauge gauge\nt_gauge 0.5\n", "# TYPE " + BuildInfoName + " gauge\n", "# TYPE go_goroutines gauge\n"} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("WriteText lacks %q", line)
		}
	}

	clash := prometheus.NewGauge(prometheus.GaugeOpts{Name: "t_gauge", Help: "A gauge."})
	reg.MustRegister(clash)
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "t_gauge") {
		t.Errorf("Gather with t_gauge from a collector and a text source: err %v, want one naming t_gauge", err)
	}
	if err := reg.WriteText(io.Discard); err == nil || !strings.Contains(err.Error(), "t_gauge") {
		t.Errorf("WriteText with t_gauge from a collector and a text source: err %v, want one naming t_gauge", err)
	}
	if err := Merge(reg).(interface{ WriteText(io.Writer) error }).WriteText(io.Discard); err == nil || !strings.Contains(err.Error(), "t_gauge") {
		t.Errorf("Merge's WriteText with t_gauge from a collector and a text source: err %v, want one naming t_gauge", err)
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(r.(string), "t_counter_total") {
				t.Errorf("MustAddText of a family already written: recovered %v, want a panic naming t_counter_total", r)
			}
		}()
		reg.MustAddText(testSource{testFamilies[:1]})
	}()
}

// TestMergeWritesText: Merge's text carries first's text sources and the
// families of the rest first lacks, once.
func TestMergeWritesText(t *testing.T) {
	first := NewRegistry()
	first.MustAddText(testSource{testFamilies[1:2]})
	rest := prometheus.NewRegistry()
	rest.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "t_rest", Help: "From the rest."}),
		prometheus.NewGauge(prometheus.GaugeOpts{Name: "go_goroutines", Help: "A second copy."}))
	m := Merge(first, rest)
	var text bytes.Buffer
	if err := m.(interface{ WriteText(io.Writer) error }).WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		line string
		n    int
	}{{"t_gauge 0.5\n", 1}, {"t_rest 0\n", 1}, {"# TYPE go_goroutines gauge\n", 1}, {"# HELP go_goroutines A second copy.", 0}} {
		if n := strings.Count(text.String(), c.line); n != c.n {
			t.Errorf("Merge's text has %q %d times, want %d", c.line, n, c.n)
		}
	}
	fams, err := m.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range fams {
		if f.GetName() == "t_gauge" || f.GetName() == "t_rest" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("Merge gathers %d of t_gauge and t_rest, want both", n)
	}
}

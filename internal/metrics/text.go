package metrics

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// A TextSource writes metric families straight in Prometheus' text format
// (version 0.0.4), for a collector with many series: client_golang builds
// a protobuf message for every series of every scrape, about 20
// allocations each. A VRRP engine's 1,000 instances and 10,000 VIPs are
// 18,000 series: a scrape allocated 22 MB (docs/design/memory.md).
type TextSource interface {
	// Families names every family WriteText may write.
	Families() []string
	// WriteText writes the families' series.
	WriteText(t *Text)
}

// Text writes metric families in the text format. A family's HELP and
// TYPE lines come before its first series; a family without series is
// left out, as client_golang leaves it out.
type Text struct {
	w      *bufio.Writer
	buf    []byte
	name   string // the family whose header is pending or written
	help   string
	typ    string
	headed bool
}

// NewText returns a Text writing to w; Flush it when done.
func NewText(w io.Writer) *Text {
	return &Text{w: bufio.NewWriterSize(w, 32<<10), buf: make([]byte, 0, 64)}
}

// Flush writes what is buffered.
func (t *Text) Flush() error { return t.w.Flush() }

// Family starts the family name of type typ ("gauge", "counter" or
// "untyped"), whose HELP line is help.
func (t *Text) Family(name, typ, help string) {
	t.name, t.typ, t.help, t.headed = name, typ, help, false
}

// Sample writes a series of the current family: labels are label names
// and values in turn.
func (t *Text) Sample(v float64, labels ...string) {
	if !t.headed {
		t.headed = true
		t.w.WriteString("# HELP ")
		t.w.WriteString(t.name)
		t.w.WriteByte(' ')
		writeEscaped(t.w, t.help, false)
		t.w.WriteString("\n# TYPE ")
		t.w.WriteString(t.name)
		t.w.WriteByte(' ')
		t.w.WriteString(t.typ)
		t.w.WriteByte('\n')
	}
	t.w.WriteString(t.name)
	for i := 0; i+1 < len(labels); i += 2 {
		if i == 0 {
			t.w.WriteByte('{')
		} else {
			t.w.WriteByte(',')
		}
		t.w.WriteString(labels[i])
		t.w.WriteString(`="`)
		writeEscaped(t.w, labels[i+1], true)
		t.w.WriteByte('"')
	}
	if len(labels) > 1 {
		t.w.WriteByte('}')
	}
	t.w.WriteByte(' ')
	t.buf = appendFloat(t.buf[:0], v)
	t.w.Write(t.buf)
	t.w.WriteByte('\n')
}

// writeEscaped writes s with the text format's escapes: a backslash and a
// line feed, and in a label value a double quote too.
func writeEscaped(w *bufio.Writer, s string, quote bool) {
	start := 0
	for i := 0; i < len(s); i++ {
		var esc string
		switch {
		case s[i] == '\\':
			esc = `\\`
		case s[i] == '\n':
			esc = `\n`
		case s[i] == '"' && quote:
			esc = `\"`
		default:
			continue
		}
		w.WriteString(s[start:i])
		w.WriteString(esc)
		start = i + 1
	}
	w.WriteString(s[start:])
}

// appendFloat appends v as client_golang's text encoder writes it.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case v == 1:
		return append(b, '1')
	case v == 0:
		return append(b, '0')
	case v == -1:
		return append(b, "-1"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// Registry is the registry a daemon serves (NewRegistry): client_golang's,
// with text sources beside its collectors. WriteText writes both without
// building a protobuf message per series; Gather gathers both, the text
// sources' families parsed from their text.
type Registry struct {
	*prometheus.Registry
	mu   sync.Mutex
	text []TextSource
}

// MustAddText adds s; it panics when s names a family another text source
// already writes, as MustRegister does for a collector's.
func (r *Registry) MustAddText(s TextSource) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.text {
		for _, name := range s.Families() {
			if slices.Contains(o.Families(), name) {
				panic(fmt.Sprintf("metrics: family %s is written by two text sources", name))
			}
		}
	}
	r.text = append(r.text, s)
}

func (r *Registry) sources() []TextSource {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.text)
}

// WriteText writes every family in the text format: the collectors'
// through client_golang's encoder, then the text sources'.
func (r *Registry) WriteText(w io.Writer) error {
	fams, err := r.Registry.Gather()
	if err != nil {
		return err
	}
	if err := clash(fams, r.textFamilies()); err != nil {
		return err
	}
	return writeText(w, fams, r.sources())
}

// clash is the error of a family both gathered from a collector (fams)
// and written by a text source (names), nil when there is none.
func clash(fams []*dto.MetricFamily, names map[string]bool) error {
	for _, f := range fams {
		if names[f.GetName()] {
			return fmt.Errorf("metrics: family %s is gathered from a collector and written by a text source", f.GetName())
		}
	}
	return nil
}

func writeText(w io.Writer, fams []*dto.MetricFamily, srcs []TextSource) error {
	t := NewText(w)
	enc := expfmt.NewEncoder(t.w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range fams {
		if err := enc.Encode(f); err != nil {
			return err
		}
	}
	for _, s := range srcs {
		s.WriteText(t)
	}
	return t.Flush()
}

// Gather gathers the collectors' families and the text sources', sorted by
// name; a family written by both is an error.
func (r *Registry) Gather() ([]*dto.MetricFamily, error) {
	fams, err := r.Registry.Gather()
	if err != nil {
		return fams, err
	}
	parsed, err := parseSources(r.sources())
	if err != nil {
		return fams, err
	}
	if err := clash(fams, r.textFamilies()); err != nil {
		return fams, err
	}
	for _, f := range parsed {
		fams = append(fams, f)
	}
	sort.Slice(fams, func(i, j int) bool { return fams[i].GetName() < fams[j].GetName() })
	return fams, nil
}

// textFamilies names the families the text sources write.
func (r *Registry) textFamilies() map[string]bool {
	names := map[string]bool{}
	for _, s := range r.sources() {
		for _, n := range s.Families() {
			names[n] = true
		}
	}
	return names
}

// parseSources parses what srcs write.
func parseSources(srcs []TextSource) (map[string]*dto.MetricFamily, error) {
	if len(srcs) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	t := NewText(&buf)
	for _, s := range srcs {
		s.WriteText(t)
	}
	if err := t.Flush(); err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(&buf)
	if err != nil {
		return nil, fmt.Errorf("metrics: a text source wrote what does not parse: %w", err)
	}
	for _, f := range fams {
		sortMetrics(f.Metric)
	}
	return fams, nil
}

// sortMetrics orders a family's series by their label values, label by
// label in the order of the names, as client_golang's Gather does.
func sortMetrics(ms []*dto.Metric) {
	for _, m := range ms {
		sort.Slice(m.Label, func(i, j int) bool { return m.Label[i].GetName() < m.Label[j].GetName() })
	}
	sort.SliceStable(ms, func(i, j int) bool {
		a, b := ms[i].GetLabel(), ms[j].GetLabel()
		for k := 0; k < len(a) && k < len(b); k++ {
			if a[k].GetValue() != b[k].GetValue() {
				return a[k].GetValue() < b[k].GetValue()
			}
		}
		return len(a) < len(b)
	})
}

// Collector adapts s to a prometheus.Collector, for a registry that is not
// a Registry (tests): each Collect parses s's text. It is unchecked (it
// describes nothing), as its families are known only from the text.
func Collector(s TextSource) prometheus.Collector { return textCollector{s} }

type textCollector struct{ s TextSource }

func (textCollector) Describe(chan<- *prometheus.Desc) {}

func (c textCollector) Collect(ch chan<- prometheus.Metric) {
	fams, err := parseSources([]TextSource{c.s})
	if err != nil {
		ch <- prometheus.NewInvalidMetric(prometheus.NewInvalidDesc(err), err)
		return
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var names, values []string
			for _, lp := range m.GetLabel() {
				names, values = append(names, lp.GetName()), append(values, lp.GetValue())
			}
			d := prometheus.NewDesc(f.GetName(), f.GetHelp(), names, nil)
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, m.GetCounter().GetValue(), values...)
			case dto.MetricType_GAUGE:
				ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, m.GetGauge().GetValue(), values...)
			default:
				ch <- prometheus.MustNewConstMetric(d, prometheus.UntypedValue, m.GetUntyped().GetValue(), values...)
			}
		}
	}
}

// AddText adds s to reg: to its text sources when reg is a Registry,
// otherwise as a Collector.
func AddText(reg prometheus.Registerer, s TextSource) {
	if r, ok := reg.(*Registry); ok {
		r.MustAddText(s)
		return
	}
	reg.MustRegister(Collector(s))
}

package metrics

import (
	"io"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"github.com/vipstack/vipstack/internal/version"
)

// BuildInfoName is the name of the build information series.
const BuildInfoName = "vipstack_build_info"

// NewRegistry returns the registry a daemon serves: vipstack_build_info of
// this binary, go_* (the Go runtime) and process_* (CPU, memory, open
// files of this process), to which the daemon adds its own collectors
// and text sources.
func NewRegistry() *Registry {
	reg := &Registry{Registry: prometheus.NewRegistry()}
	reg.MustRegister(BuildInfo(version.Get()),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// BuildInfo is the collector of vipstack_build_info{version,revision,
// goversion} 1, for in.
func BuildInfo(in version.Info) prometheus.Collector {
	rev := in.Revision
	if in.Modified && rev != "" {
		rev += "-dirty"
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: BuildInfoName,
		Help: "Always 1; the labels name the build: its version (vipstack version), VCS revision and Go toolchain.",
		ConstLabels: prometheus.Labels{
			"version": in.Version, "revision": rev, "goversion": in.GoVersion,
		},
	})
	g.Set(1)
	return g
}

// Merge gathers from first and then from each of rest, leaving out of
// rest the families first already has. A daemon that also serves
// Prometheus' default registry (CoreDNS' plugins register there, beside
// the default registry's own Go and process collectors) serves
// Merge(NewRegistry(), prometheus.DefaultGatherer): one copy of go_* and
// process_*.
func Merge(first prometheus.Gatherer, rest ...prometheus.Gatherer) prometheus.Gatherer {
	return merged{first: first, rest: rest}
}

type merged struct {
	first prometheus.Gatherer
	rest  []prometheus.Gatherer
}

func (m merged) Gather() ([]*dto.MetricFamily, error) {
	out, err := m.first.Gather()
	if err != nil {
		return out, err
	}
	seen := map[string]bool{}
	for _, f := range out {
		seen[f.GetName()] = true
	}
	out, err = appendRest(out, seen, m.rest)
	if err != nil {
		return out, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, nil
}

// appendRest appends to fams the families rest gathers whose names are
// not in seen (which it adds them to), the first of each name.
func appendRest(fams []*dto.MetricFamily, seen map[string]bool, rest []prometheus.Gatherer) ([]*dto.MetricFamily, error) {
	for _, g := range rest {
		more, err := g.Gather()
		for _, f := range more {
			if !seen[f.GetName()] {
				seen[f.GetName()] = true
				fams = append(fams, f)
			}
		}
		if err != nil {
			return fams, err
		}
	}
	return fams, nil
}

// WriteText writes what Gather gathers in the text format, first's text
// sources without parsing them when first is a Registry.
func (m merged) WriteText(w io.Writer) error {
	r, ok := m.first.(*Registry)
	if !ok {
		fams, err := m.Gather()
		if err != nil {
			return err
		}
		return writeText(w, fams, nil)
	}
	fams, err := r.Registry.Gather()
	if err != nil {
		return err
	}
	seen := r.textFamilies()
	if err := clash(fams, seen); err != nil {
		return err
	}
	for _, f := range fams {
		seen[f.GetName()] = true
	}
	if fams, err = appendRest(fams, seen, m.rest); err != nil {
		return err
	}
	return writeText(w, fams, r.sources())
}

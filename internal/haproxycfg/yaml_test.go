package haproxycfg

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestYAMLRoundTrip checks that every testdata config, written in the
// native YAML form and read back, is the same model: both forms go through
// lbconfig.Validate and mean the same thing.
func TestYAMLRoundTrip(t *testing.T) {
	for _, name := range testdataConfigs {
		t.Run(strings.TrimPrefix(name, "testdata/"), func(t *testing.T) {
			want, err := Load(name)
			if err != nil {
				t.Fatal(err)
			}
			y, err := lbconfig.FormatYAML(want)
			if err != nil {
				t.Fatal(err)
			}
			got, err := lbconfig.ParseYAML("lb.yaml", y)
			if err != nil {
				t.Fatalf("ParseYAML: %v\n%s", err, y)
			}
			// Source, haproxy-only warnings and haproxy's proxy numbering
			// (section order, stats socket) differ by nature.
			ignore := cmpopts.IgnoreFields(lbconfig.Config{}, "Source", "Warnings", "Proxies", "StatsSocket")
			if diff := cmp.Diff(want, got, cmpOpts, ignore); diff != "" {
				t.Errorf("YAML round trip mismatch (-haproxy.cfg +YAML):\n%s\nYAML:\n%s", diff, y)
			}
			for _, key := range []string{"frontend main", "frontend api", "backend masters", "backend api"} {
				if _, inCfg := want.Source[key]; inCfg && !strings.HasPrefix(got.Source[key], "lb.yaml:") {
					t.Errorf("YAML Source[%q] = %q, want a lb.yaml line", key, got.Source[key])
				}
			}
		})
	}
}

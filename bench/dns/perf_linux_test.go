package main

import (
	"os"
	"strings"
	"testing"
)

// TestCorefilesMatchGoBenchmark keeps internal/dns's BenchmarkQuery on the
// Corefiles this bench runs (apart from the port).
func TestCorefilesMatchGoBenchmark(t *testing.T) {
	for _, c := range []struct{ file, corefile, port string }{
		{"bench-clusterdns.Corefile", clusterCorefile, ".:5301 {"},
		{"bench-template.Corefile", templateCorefile, ".:5302 {"},
	} {
		b, err := os.ReadFile("../../internal/dns/testdata/" + c.file)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(b), strings.Replace(c.corefile, c.port, ".:0 {", 1); got != want {
			t.Errorf("internal/dns/testdata/%s differs from this bench's Corefile:\n%s\nwant:\n%s", c.file, got, want)
		}
	}
	b, err := os.ReadFile("../../internal/dns/testdata/bench-queries.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(b)), strings.Join(queryMix, "\n"); got != want {
		t.Errorf("internal/dns/testdata/bench-queries.txt differs from this bench's query mix:\n%s\nwant:\n%s", got, want)
	}
}

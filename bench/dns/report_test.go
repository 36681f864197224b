package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseDNSPerf(t *testing.T) {
	b, err := os.ReadFile("testdata/dnsperf.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseDNSPerf(string(b))
	if err != nil {
		t.Fatal(err)
	}
	want := perf{
		Sent: 161331, Completed: 161331, Lost: 0,
		QPS:        32222.248853,
		Latency:    3041 * time.Microsecond,
		LatencyMax: 49150 * time.Microsecond,
		Rcodes:     "NOERROR 161331 (100.00%)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseDNSPerf (-want +got):\n%s", diff)
	}
	if _, err := parseDNSPerf("[Fatal] socket: permission denied"); err == nil {
		t.Errorf("parseDNSPerf accepted output without statistics")
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{
		{in: nil, want: 0},
		{in: []float64{3}, want: 3},
		{in: []float64{3, 1}, want: 2},
		{in: []float64{5, 1, 3}, want: 3},
	}
	for _, tt := range tests {
		if got := median(tt.in); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestRatiosAndVerdicts(t *testing.T) {
	ph := phase{
		Name: "throughput",
		Runs: map[string][]perf{
			nameCluster:  {{QPS: 30000, Latency: 100 * time.Microsecond}, {QPS: 34000, Latency: 120 * time.Microsecond}},
			nameTemplate: {{QPS: 20000, Latency: 150 * time.Microsecond}, {QPS: 24000, Latency: 170 * time.Microsecond}},
			nameStock:    {{QPS: 33000, Latency: 100 * time.Microsecond}, {QPS: 35000, Latency: 100 * time.Microsecond}},
		},
	}
	q, l := ph.ratios(nameTemplate)
	if q != 32000.0/22000.0 || l != 160.0/110.0 {
		t.Errorf("ratios = %v, %v; want %v, %v", q, l, 32000.0/22000.0, 160.0/110.0)
	}
	var buf bytes.Buffer
	printPerf(&buf, []phase{ph})
	for _, want := range []string{
		"PASS  throughput: clusterdns/template QPS = 1.455",
		"MISS  throughput: clusterdns/stock CoreDNS QPS = 0.941",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("printPerf lacks %q:\n%s", want, buf.String())
		}
	}
	buf.Reset()
	fixed := phase{Name: "latency at 5000 qps", Fixed: true, Runs: map[string][]perf{
		nameCluster:  {{QPS: 4999, Latency: 100 * time.Microsecond}},
		nameTemplate: {{QPS: 5000, Latency: 90 * time.Microsecond}},
	}}
	printPerf(&buf, []phase{fixed})
	if !strings.Contains(buf.String(), "INFO  latency at 5000 qps: template/clusterdns average latency = 0.900") {
		t.Errorf("printPerf, fixed rate:\n%s", buf.String())
	}
	buf.Reset()
	printMDNS(&buf, []event{{FromCause: 1500 * time.Millisecond, FromPacket: 20 * time.Millisecond}},
		[]event{{FromCause: 1200 * time.Millisecond, FromPacket: -1}})
	for _, want := range []string{"PASS  join, announcement -> answer: median 20 ms", "MISS  leave, SIGTERM -> answer: median 1200 ms", "MISS  leave, goodbye -> answer: no data"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("printMDNS output lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestQuantilesAndRTT(t *testing.T) {
	var xs []time.Duration
	for i := 100; i >= 1; i-- {
		xs = append(xs, time.Duration(i)*time.Microsecond)
	}
	if got, want := quantiles(xs), [3]time.Duration{51 * time.Microsecond, 91 * time.Microsecond, 100 * time.Microsecond}; got != want {
		t.Errorf("quantiles = %v, want %v", got, want)
	}
	ph := rttPhase{N: 100, Pause: time.Millisecond, Runs: map[string][][3]time.Duration{
		nameCluster:  {{100, 200, 900}, {120, 220, 1000}, {110, 210, 800}},
		nameTemplate: {{200, 300, 900}, {220, 320, 950}, {210, 330, 700}},
		nameStock:    {{100, 300, 1000}, {105, 320, 950}, {100, 330, 1100}},
	}, All: map[string][3]time.Duration{
		nameCluster:  {110, 210, 900},
		nameTemplate: {210, 320, 900},
		nameStock:    {100, 320, 1000},
	}}
	var buf bytes.Buffer
	printRTT(&buf, ph)
	for _, want := range []string{
		"PASS  one query at a time: template/clusterdns latency p50 = 1.909",
		"PASS  one query at a time: template/clusterdns latency p99 = 1.000",
		"MISS  one query at a time: stock CoreDNS/clusterdns latency p50 = 0.909",
		"PASS  one query at a time: stock CoreDNS/clusterdns latency p99 = 1.111",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("printRTT lacks %q:\n%s", want, buf.String())
		}
	}
}

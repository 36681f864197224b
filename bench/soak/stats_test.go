package main

import (
	"math"
	"testing"
	"time"
)

// ramp makes n samples, one every step, of v(i).
func ramp(n int, step time.Duration, v func(i int) float64) []Sample {
	xs := make([]Sample, n)
	for i := range xs {
		xs[i] = Sample{At: time.Duration(i) * step, Value: v(i)}
	}
	return xs
}

func TestFitLine(t *testing.T) {
	for _, tc := range []struct {
		name       string
		xs         []Sample
		perHour    float64
		growth     float64
		resid      float64
		lo, hi     float64
		metric     Metric
		wantGrowth bool
	}{
		{name: "flat", xs: ramp(60, time.Minute, func(int) float64 { return 40 }),
			perHour: 0, growth: 0, resid: 0, lo: 40, hi: 40, metric: FDs},
		{name: "an fd a reload, one a minute", xs: ramp(61, time.Minute, func(i int) float64 { return float64(30 + i) }),
			perHour: 60, growth: 60, resid: 0, lo: 30, hi: 90, metric: FDs, wantGrowth: true},
		{name: "alternating noise, no trend", xs: ramp(60, time.Minute, func(i int) float64 { return float64(40 + 6*(i%2)) }),
			lo: 40, hi: 46, metric: FDs, resid: 3.05, perHour: 0.300, growth: 0.295},
		{name: "one step after warm-up", xs: ramp(61, time.Minute, func(i int) float64 { return float64(20 + 3*min(1, i/30)) }),
			lo: 20, hi: 23, metric: Goroutines, perHour: 4.47, growth: 4.47, resid: 0.763},
		{name: "RSS creeping 20 MiB an hour", xs: ramp(61, time.Minute, func(i int) float64 { return float64(50<<20) + float64(i)*(20<<20)/60 }),
			lo: 50 << 20, hi: 70 << 20, metric: RSS, perHour: 20 << 20, growth: 20 << 20, wantGrowth: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fitLine(tc.xs)
			near := func(what string, got, want float64) {
				if math.Abs(got-want) > 0.01*max(1, math.Abs(want)) {
					t.Errorf("%s = %.3f, want %.3f", what, got, want)
				}
			}
			near("per hour", f.PerHour, tc.perHour)
			near("growth", f.Growth, tc.growth)
			near("residual", f.Resid, tc.resid)
			near("min", f.Min, tc.lo)
			near("max", f.Max, tc.hi)
			if got := Grows(tc.metric, f); got != tc.wantGrowth {
				t.Errorf("Grows = %v, want %v (growth %.1f, noise %.1f)", got, tc.wantGrowth, f.Growth, noise(tc.metric, f))
			}
		})
	}
}

func TestGrowsNeedsSamples(t *testing.T) {
	f := fitLine(ramp(4, time.Minute, func(i int) float64 { return float64(100 * i) }))
	if Grows(FDs, f) {
		t.Errorf("4 samples judged a leak: %+v", f)
	}
}

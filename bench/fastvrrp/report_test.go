package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestVerdicts checks the bench's verdict logic on made-up figures (the
// suite's short run: no namespaces, no timing).
func TestVerdicts(t *testing.T) {
	const msec = time.Millisecond
	ka := pairResult{Impl: "keepalived", FalseFailovers: 3, Adverts: 60000, Crashes: []time.Duration{40 * msec, 44 * msec}}
	for _, tc := range []struct {
		name string
		vs   pairResult
		want []string
	}{
		{
			name: "no false failover, crashes within the bound",
			vs:   pairResult{Impl: "vipstack", Adverts: 60000, Crashes: []time.Duration{38 * msec, 41 * msec, 46 * msec}},
			want: []string{
				"PASS  vipstack false failovers in 10m0s under load: 0 (want 0; keepalived: 3)",
				"PASS  vipstack crash failover median 41.0 ms, max 46.0 ms, 0 failed (want median <= 46.1 ms, 3 x advert + skew + 10 ms; keepalived median 42.0 ms)",
			},
		},
		{
			name: "one false failover, slow crashes",
			vs:   pairResult{Impl: "vipstack", FalseFailovers: 1, Adverts: 60000, Crashes: []time.Duration{47 * msec, 60 * msec, 50 * msec}},
			want: []string{
				"MISS  vipstack false failovers in 10m0s under load: 1 (want 0; keepalived: 3)",
				"MISS  vipstack crash failover median 50.0 ms, max 60.0 ms, 0 failed (want median <= 46.1 ms, 3 x advert + skew + 10 ms; keepalived median 42.0 ms)",
			},
		},
		{
			name: "a master that never advertised passes nothing; a failed crash misses",
			vs:   pairResult{Impl: "vipstack", Crashes: []time.Duration{30 * msec}, CrashErrs: []string{"the backup never advertised"}},
			want: []string{
				"MISS  vipstack false failovers in 10m0s under load: 0 (want 0; keepalived: 3)",
				"MISS  vipstack crash failover median 30.0 ms, max 30.0 ms, 1 failed (want median <= 46.1 ms, 3 x advert + skew + 10 ms; keepalived median 42.0 ms)",
			},
		},
		{
			name: "no crash measured",
			vs:   pairResult{Impl: "vipstack", Adverts: 10, CrashErrs: []string{"x", "y"}},
			want: []string{
				"PASS  vipstack false failovers in 10m0s under load: 0 (want 0; keepalived: 3)",
				"MISS  vipstack crash failover: no trial measured (2 failed)",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, verdicts(tc.vs, ka, 10*time.Minute)); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGapTable checks the histogram's buckets and rows.
func TestGapTable(t *testing.T) {
	res := []pairResult{
		{Impl: "vipstack", RT: 50, Gaps: []int{100, 5, 4, 3, 2, 1, 0, 0, 1}, LongGaps: 1, Shared: 1},
		{Impl: "keepalived"},
	}
	got := gapTable(res)
	want := []string{"master of", "0-10.5", "10.5-11.0", "11.0-12.0", "12.0-15.0", "15.0-20.0", "20.0-30.0", "30.0-36.0", "36.0-46.0", "> 46.0", "of them shared"}
	if diff := cmp.Diff(want, got.Header); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	rows := [][]string{
		{"vipstack, rt priority 50", "100", "5", "4", "3", "2", "1", "0", "0", "1", "1"},
		{"keepalived, no rt priority", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0"},
	}
	if diff := cmp.Diff(rows, got.Rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}

// TestCPULine checks the CPU comparison: each vipstack pair against
// keepalived's at the same vrrp_rt_priority, nothing without keepalived's.
func TestCPULine(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  []pairResult
		want string
	}{
		{
			name: "both priorities",
			res: []pairResult{
				{Impl: "vipstack", RT: 50, MasterCPU: 4.4, BackupCPU: 1.6},
				{Impl: "keepalived", RT: 50, MasterCPU: 1.1, BackupCPU: 0.5},
				{Impl: "vipstack", MasterCPU: 4.3, BackupCPU: 1.7},
				{Impl: "keepalived", MasterCPU: 0.5, BackupCPU: 0.2},
			},
			want: "CPU in the soak, vipstack/keepalived at the same settings (no target): vipstack, rt priority 50: master 4.00, backup 3.20; vipstack, no rt priority: master 8.60, backup 8.50.",
		},
		{
			name: "keepalived measured at nothing",
			res:  []pairResult{{Impl: "vipstack", RT: 50, MasterCPU: 4.4, BackupCPU: 1.6}, {Impl: "keepalived", RT: 50}},
			want: "CPU in the soak, vipstack/keepalived: not measured.",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cpuLine(tc.res); got != tc.want {
				t.Errorf("cpuLine:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

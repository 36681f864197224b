package main

import (
	"bytes"
	"testing"
	"time"
)

// TestReportKernelTargets: with the kernel data path the table carries
// issue 32's targets and the via/direct line its verdict.
func TestReportKernelTargets(t *testing.T) {
	ka := func(rps float64) figures { return figures{KeepAlive: wrkResult{RPS: rps}} }
	tests := []struct {
		name   string
		kernel bool
		vip    float64
		want   []string
		absent []string
	}{
		{name: "relay", kernel: false, vip: 24000,
			want: []string{"| keep-alive requests/s | 30.0k | 20.0k | 24.0k | 1.20 | >= 1.0 | PASS |"}, absent: []string{"via/direct"}},
		{name: "kernel, lead", kernel: true, vip: 25000,
			want: []string{"| keep-alive requests/s | 30.0k | 20.0k | 25.0k | 1.25 | >= 1.2 | PASS |", "(via/direct) >= 0.8: 0.83, PASS."}},
		{name: "kernel, parity", kernel: true, vip: 20000,
			want: []string{"| keep-alive requests/s | 30.0k | 20.0k | 20.0k | 1.00 | >= 1.2 | MISS |", "(via/direct) >= 0.8: 0.67, MISS."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &results{Kernel: tt.kernel, Rounds: map[string][]figures{
				implDirect: {ka(30000)}, implHAProxy: {ka(20000)}, implVipstack: {ka(tt.vip)}}}
			var b bytes.Buffer
			if err := r.report().Markdown(&b); err != nil {
				t.Fatal(err)
			}
			says(t, b.String(), tt.want, tt.absent)
		})
	}
}

// TestReportKernelP99 judges the kernel path's keep-alive p99 target
// (<= 1.0) on the open loop, from the figures of the 2026-11-30 quiet
// run: wrk's p99 is worse for vipstack, which ran at 1.55 times
// haproxy's rate, and reported without a target; at the same offered
// load vipstack's is 0.40 of haproxy's. The MISS case is above 1.0 and
// under the relay's 1.1. With mode http, the new connections' p99 target
// stays wrk's and the text says why.
func TestReportKernelP99(t *testing.T) {
	round := func(rps float64, wrkP99, openP99 time.Duration) figures {
		return figures{KeepAlive: wrkResult{RPS: rps, P99: wrkP99}, Close: wrkResult{RPS: 1, P99: wrkP99},
			Paced: pacedResult{Rate: 31100, Requests: 311000, P99: openP99}}
	}
	tests := []struct {
		name       string
		http       bool
		vipOpenP99 time.Duration
		want       []string
		absent     []string
	}{
		{name: "PASS at the same rate", vipOpenP99: 2170 * time.Microsecond,
			want: []string{
				"| " + nameKeepAliveP99 + " | 9.41 ms | 6.48 ms | 9.01 ms | 1.39 |  |  |",
				"| " + nameOpenLoopP99 + " | 1.95 ms | 5.49 ms | 2.17 ms | 0.40 | <= 1.0 | PASS |",
				"(0.75 of haproxy's wrk keep-alive requests/s in that round; round 1 first: 31100 a second)"},
			absent: []string{"Connection: close p99 target"}},
		{name: "MISS above 1.0", vipOpenP99: 5800 * time.Microsecond,
			want: []string{"| " + nameOpenLoopP99 + " | 1.95 ms | 5.49 ms | 5.80 ms | 1.06 | <= 1.0 | MISS |"}},
		{name: "mode http", http: true, vipOpenP99: 2170 * time.Microsecond,
			want: []string{
				"| " + nameCloseP99 + " | 9.41 ms | 6.48 ms | 9.01 ms | 1.39 | <= 1.1 | MISS |",
				"The Connection: close p99 target is still wrk's: the bench has no open loop of new connections."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &results{Kernel: true, HTTP: tt.http, PacedFraction: 0.75, Rounds: map[string][]figures{
				implDirect:   {round(70100, 9410*time.Microsecond, 1950*time.Microsecond)},
				implHAProxy:  {round(41500, 6480*time.Microsecond, 5490*time.Microsecond)},
				implVipstack: {round(64200, 9010*time.Microsecond, tt.vipOpenP99)}}}
			var b bytes.Buffer
			if err := r.report().Markdown(&b); err != nil {
				t.Fatal(err)
			}
			says(t, b.String(), tt.want, tt.absent)
		})
	}
}

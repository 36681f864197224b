package main

import (
	"bytes"
	"strings"
	"testing"
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
			for _, s := range tt.want {
				if !strings.Contains(b.String(), s) {
					t.Errorf("report does not say %q:\n%s", s, b.String())
				}
			}
			for _, s := range tt.absent {
				if strings.Contains(b.String(), s) {
					t.Errorf("report says %q:\n%s", s, b.String())
				}
			}
		})
	}
}

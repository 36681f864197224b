package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    procStat
		wantErr bool
	}{
		{
			name: "keepalived",
			line: "4242 (keepalived) S 4241 4241 4241 0 -1 4194624 300 0 0 0 150 50 0 0 20 0 1 0 100 10000000 500 18446744073709551615",
			want: procStat{PGrp: 4241, CPU: 2 * time.Second},
		},
		{
			name: "command with spaces and parentheses",
			line: "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 0 0 0",
			want: procStat{PGrp: 7, CPU: 70 * time.Millisecond},
		},
		{name: "no command", line: "7 x R 1", wantErr: true},
		{name: "too short", line: "7 (x) R 1 7", wantErr: true},
		{name: "not a number", line: "7 (x) R 1 y 7 0 -1 0 0 0 0 0 3 4", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat(tt.line)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseStat() error = %v, want error %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseStat() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseStatusKB(t *testing.T) {
	status := "Name:\thaproxy\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\nThreads:\t2\n"
	tests := []struct {
		name    string
		field   string
		want    uint64
		wantErr bool
	}{
		{name: "rss", field: "VmRSS", want: 10 << 20},
		{name: "hwm", field: "VmHWM", want: 20 << 20},
		{name: "not in kB", field: "Threads", wantErr: true},
		{name: "missing", field: "VmSwap", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatusKB(status, tt.field)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseStatusKB(%s) error = %v, want error %v", tt.field, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseStatusKB(%s) (-want +got):\n%s", tt.field, diff)
			}
		})
	}
}

func TestParseStatsCSV(t *testing.T) {
	csv := "# pxname,svname,qcur,qmax,scur,smax,slim,stot\n" +
		"stats,FRONTEND,,,1,1,8000,3\n" +
		"main,FRONTEND,,,8000,8000,8000,10000\n" +
		"be,b1,0,0,8000,8000,,10000\n"
	tests := []struct {
		name    string
		text    string
		px      string
		want    frontendRow
		wantErr bool
	}{
		{name: "main", text: csv, px: "main", want: frontendRow{Scur: 8000, Smax: 8000, Slim: 8000}},
		{name: "a backend has no FRONTEND row", text: csv, px: "be", wantErr: true},
		{name: "no scur column", text: "# pxname,svname\nmain,FRONTEND\n", px: "main", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatsCSV(tt.text, tt.px)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseStatsCSV() error = %v, want error %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseStatsCSV() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	tests := []struct {
		name string
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{name: "empty", p: 50, want: 0},
		{name: "median of five", ds: ms(5, 1, 4, 2, 3), p: 50, want: 3 * time.Millisecond},
		{name: "p99 of a hundred is the 99th", ds: ms(func() []int {
			v := make([]int, 100)
			for i := range v {
				v[i] = 100 - i
			}
			return v
		}()...), p: 99, want: 99 * time.Millisecond},
		{name: "p99 of three is the largest", ds: ms(1, 2, 3), p: 99, want: 3 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, percentile(tt.ds, tt.p)); diff != "" {
				t.Errorf("percentile() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPrintVRRPRatio(t *testing.T) {
	var b strings.Builder
	err := printVRRP(&b, []vrrpFigures{
		{Impl: implKeepalived, Sent: 100, MasterCPU: 2 * time.Second, BackupCPU: 2 * time.Second, Counted: -1},
		{Impl: implVipstack, Sent: 100, MasterCPU: time.Second, BackupCPU: 1 * time.Second, Counted: 90},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "CPU under the flood, vipstack/keepalived: master 0.50, master+backup 0.50"; !strings.Contains(b.String(), want) {
		t.Errorf("printVRRP output lacks %q:\n%s", want, b.String())
	}
}

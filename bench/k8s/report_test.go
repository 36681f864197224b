package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSummarize(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100..1, unsorted
	}
	tests := []struct {
		name string
		in   []time.Duration
		of   int
		want summary
	}{
		{name: "empty", in: nil, of: 5, want: summary{N: 0, Of: 5}},
		{name: "one", in: ms(7), of: 1, want: summary{N: 1, Of: 1, P50: 7 * time.Millisecond, P99: 7 * time.Millisecond, Max: 7 * time.Millisecond}},
		{name: "hundred", in: ms(hundred...), of: 100, want: summary{N: 100, Of: 100, P50: 50 * time.Millisecond, P99: 99 * time.Millisecond, Max: 100 * time.Millisecond}},
		{name: "missing some", in: ms(3, 1, 2), of: 4, want: summary{N: 3, Of: 4, P50: 2 * time.Millisecond, P99: 3 * time.Millisecond, Max: 3 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, summarize(tt.in, tt.of)); diff != "" {
				t.Errorf("summarize (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMemTable: each process's RSS after the Services, and at rest when
// read, is judged against issue 32's 50 MiB, with its anonymous and file
// parts shown; a process whose memory could not be read is a MISS.
func TestMemTable(t *testing.T) {
	names := []string{"controller", "agent-n1", "agent-n2"}
	before := map[string]mem{"controller": {rss: 30}, "agent-n1": {rss: 31}}
	after := map[string]mem{
		"controller": {rss: 49.9, hwm: 60, anon: 20, file: 29.9},
		"agent-n1":   {rss: 50, hwm: 50, anon: 30, file: 20},
	}
	rest := map[string]mem{
		"controller": {rss: 50.1, hwm: 60, anon: 20, file: 30.1},
		"agent-n1":   {rss: 35, hwm: 50, anon: 15, file: 20},
	}
	tests := []struct {
		name       string
		rest       map[string]mem
		wantHeader []string
		want       [][]string
	}{
		{
			name:       "after only",
			wantHeader: []string{"process", "RSS before", "RSS after (anon + file)", "peak (VmHWM)", "target", "result"},
			want: [][]string{
				{"controller", "30.0 MiB", "49.9 MiB (20.0 + 29.9)", "60.0 MiB", "RSS < 50 MiB", "PASS"},
				{"agent-n1", "31.0 MiB", "50.0 MiB (30.0 + 20.0)", "50.0 MiB", "RSS < 50 MiB", "MISS"},
				{"agent-n2", "0.0 MiB", "0.0 MiB (0.0 + 0.0)", "0.0 MiB", "RSS < 50 MiB", "MISS"},
			},
		},
		{
			name: "at rest",
			rest: rest,
			wantHeader: []string{"process", "RSS before", "RSS after (anon + file)", "peak (VmHWM)", "target", "result",
				"RSS at rest (anon + file)", "result at rest"},
			want: [][]string{
				{"controller", "30.0 MiB", "49.9 MiB (20.0 + 29.9)", "60.0 MiB", "RSS < 50 MiB", "PASS", "50.1 MiB (20.0 + 30.1)", "MISS"},
				{"agent-n1", "31.0 MiB", "50.0 MiB (30.0 + 20.0)", "50.0 MiB", "RSS < 50 MiB", "MISS", "35.0 MiB (15.0 + 20.0)", "PASS"},
				{"agent-n2", "0.0 MiB", "0.0 MiB (0.0 + 0.0)", "0.0 MiB", "RSS < 50 MiB", "MISS", "0.0 MiB (0.0 + 0.0)", "MISS"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := memTable(names, before, after, tt.rest)
			if diff := cmp.Diff(tt.wantHeader, got.Header); diff != "" {
				t.Errorf("header (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got.Rows); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}
}

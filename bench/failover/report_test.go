package main

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	v2 = timerSet{ID: "v2-1s", Label: "v2 1 s", Version: 2, Advert: time.Second, Auth: "x"}
	v3 = timerSet{ID: "v3-50ms", Label: "v3 0.05 s", Version: 3, Advert: 50 * time.Millisecond}
)

func TestBound(t *testing.T) {
	tests := []struct {
		name string
		sc   scenario
		want time.Duration
	}{
		{name: "v2 crash", sc: scenario{Timers: v2, Event: eventKill}, want: 3*time.Second + 609375*time.Microsecond},
		{name: "v2 SIGTERM", sc: scenario{Timers: v2, Event: eventTerm}, want: 609375 * time.Microsecond},
		{name: "v3 0.05 crash", sc: scenario{Timers: v3, Event: eventKill}, want: 150*time.Millisecond + 30468750*time.Nanosecond},
		{name: "v3 0.05 SIGTERM", sc: scenario{Timers: v3, Event: eventTerm}, want: 30468750 * time.Nanosecond},
		{name: "v2 check fails", sc: scenario{Timers: v2, Event: eventCheck}, want: 2*time.Second + 609375*time.Microsecond},
		{name: "v3 0.05 check fails", sc: scenario{Timers: v3, Event: eventCheck}, want: 2*time.Second + 30468750*time.Nanosecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.sc.Bound()); diff != "" {
				t.Errorf("Bound() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	const msec = time.Millisecond
	tests := []struct {
		name    string
		samples []sample
		want    stats
	}{
		{name: "none", want: stats{}},
		{
			name:    "odd count takes the middle",
			samples: []sample{{D: 30 * msec}, {D: 10 * msec}, {D: 20 * msec}, {D: 50 * msec}, {D: 40 * msec}},
			want:    stats{N: 5, Median: 30 * msec, Min: 10 * msec, Max: 50 * msec},
		},
		{
			name:    "even count averages the middle two",
			samples: []sample{{D: 10 * msec}, {D: 40 * msec}, {D: 20 * msec}, {D: 30 * msec}},
			want:    stats{N: 4, Median: 25 * msec, Min: 10 * msec, Max: 40 * msec},
		},
		{
			name:    "a failure is the slowest trial",
			samples: []sample{{D: 10 * msec}, {Failed: true}, {D: 20 * msec}},
			want:    stats{N: 3, Failed: 1, Median: 20 * msec, Min: 10 * msec, Max: infinite},
		},
		{
			name:    "mostly failures: no median",
			samples: []sample{{D: 10 * msec}, {Failed: true}, {Failed: true}},
			want:    stats{N: 3, Failed: 2, Median: infinite, Min: 10 * msec, Max: infinite},
		},
		{
			name:    "even count with a failure in the middle",
			samples: []sample{{D: 10 * msec}, {Failed: true}},
			want:    stats{N: 2, Failed: 1, Median: infinite, Min: 10 * msec, Max: infinite},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, summarize(tt.samples)); diff != "" {
				t.Errorf("summarize() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTargets(t *testing.T) {
	v3kill := scenario{Timers: v3, Event: eventKill}
	v2term := scenario{Timers: v2, Event: eventTerm}
	v2check := scenario{Timers: v2, Event: eventCheck}
	ok := func(d time.Duration) outcome { return outcome{Outage: d} }
	failed := outcome{Err: errors.New("node2 did not answer")}
	tests := []struct {
		name   string
		trials map[string][]outcome
		want   []string
	}{
		{
			name: "faster and under 250 ms",
			trials: map[string][]outcome{
				key(implKeepalived, v3kill): {ok(160 * time.Millisecond)},
				key(implVipstack, v3kill):   {ok(150 * time.Millisecond)},
				key(implKeepalived, v2term): {ok(600 * time.Millisecond)},
				key(implVipstack, v2term):   {ok(600 * time.Millisecond)},
			},
			want: []string{
				"PASS  v3 0.05 s, kill -9: vipstack - keepalived = -10 ms (0.938), from the kill (want <= +10 ms, the probe's resolution)",
				"PASS  v3 0.05 s, kill -9: vipstack median 150 ms (want < 250 ms)",
				"PASS  v2 1 s, SIGTERM: vipstack - keepalived = +0 ms (1.000), from the signal (want <= +10 ms, the probe's resolution)",
			},
		},
		{
			name: "slower, over 250 ms, and failing",
			trials: map[string][]outcome{
				key(implKeepalived, v3kill): {ok(160 * time.Millisecond)},
				key(implVipstack, v3kill):   {ok(260 * time.Millisecond)},
				key(implKeepalived, v2term): {ok(600 * time.Millisecond)},
				key(implVipstack, v2term):   {failed},
			},
			want: []string{
				"MISS  v3 0.05 s, kill -9: vipstack - keepalived = +100 ms (1.625), from the kill (want <= +10 ms, the probe's resolution)",
				"MISS  v3 0.05 s, kill -9: vipstack median 260 ms (want < 250 ms)",
				"MISS  v2 1 s, SIGTERM: vipstack did not fail over in most trials",
			},
		},
		{
			name: "a crash is judged from the last advert, where the crash's phase is gone",
			trials: map[string][]outcome{
				key(implKeepalived, v3kill): {{Outage: 140 * time.Millisecond, SinceAdvert: 190 * time.Millisecond, HasSinceAdvert: true}},
				key(implVipstack, v3kill):   {{Outage: 182 * time.Millisecond, SinceAdvert: 190 * time.Millisecond, HasSinceAdvert: true}},
			},
			want: []string{
				"PASS  v3 0.05 s, kill -9: vipstack - keepalived = +0 ms (1.000), from node1's last advert (want <= +10 ms, the probe's resolution)",
				"PASS  v3 0.05 s, kill -9: vipstack median 182 ms (want < 250 ms)",
			},
		},
		{
			name: "slower from the last advert misses even when faster from the kill",
			trials: map[string][]outcome{
				key(implKeepalived, v3kill): {{Outage: 180 * time.Millisecond, SinceAdvert: 190 * time.Millisecond, HasSinceAdvert: true}},
				key(implVipstack, v3kill):   {{Outage: 150 * time.Millisecond, SinceAdvert: 211 * time.Millisecond, HasSinceAdvert: true}},
			},
			want: []string{
				"MISS  v3 0.05 s, kill -9: vipstack - keepalived = +21 ms (1.111), from node1's last advert (want <= +10 ms, the probe's resolution)",
				"PASS  v3 0.05 s, kill -9: vipstack median 150 ms (want < 250 ms)",
			},
		},
		{
			name: "within one probe passes",
			trials: map[string][]outcome{
				key(implKeepalived, v3kill): {ok(155 * time.Millisecond)},
				key(implVipstack, v3kill):   {ok(165 * time.Millisecond)},
			},
			want: []string{
				"PASS  v3 0.05 s, kill -9: vipstack - keepalived = +10 ms (1.065), from the kill (want <= +10 ms, the probe's resolution)",
				"PASS  v3 0.05 s, kill -9: vipstack median 165 ms (want < 250 ms)",
			},
		},
		{
			name: "one printed millisecond beyond a probe misses",
			trials: map[string][]outcome{
				key(implKeepalived, v3kill): {ok(155 * time.Millisecond)},
				key(implVipstack, v3kill):   {ok(166*time.Millisecond + 400*time.Microsecond)},
			},
			want: []string{
				"MISS  v3 0.05 s, kill -9: vipstack - keepalived = +11 ms (1.071), from the kill (want <= +10 ms, the probe's resolution)",
				"PASS  v3 0.05 s, kill -9: vipstack median 166 ms (want < 250 ms)",
			},
		},
		{
			name: "keepalived filtered out: only the absolute target",
			trials: map[string][]outcome{
				key(implVipstack, v3kill): {ok(200 * time.Millisecond)},
			},
			want: []string{"PASS  v3 0.05 s, kill -9: vipstack median 200 ms (want < 250 ms)"},
		},
		{
			name: "check fails: faster than keepalived and within fall x interval + skew",
			trials: map[string][]outcome{
				key(implKeepalived, v2check): {ok(4576 * time.Millisecond)},
				key(implVipstack, v2check):   {ok(2100 * time.Millisecond), ok(2609 * time.Millisecond), ok(2700 * time.Millisecond)},
			},
			want: []string{
				"PASS  v2 1 s, check fails (interval 1s, fall 2): vipstack - keepalived = -1967 ms (0.570), from the check starting to fail (want <= +10 ms, the probe's resolution)",
				"PASS  v2 1 s, check fails (interval 1s, fall 2): vipstack median 2609 ms, max 2700 ms (want median <= 2609 ms, fall x interval + skew)",
			},
		},
		{
			name: "check fails: as slow as keepalived's master-down timer misses",
			trials: map[string][]outcome{
				key(implKeepalived, v2check): {ok(4576 * time.Millisecond)},
				key(implVipstack, v2check):   {ok(4100 * time.Millisecond)},
			},
			want: []string{
				"PASS  v2 1 s, check fails (interval 1s, fall 2): vipstack - keepalived = -476 ms (0.896), from the check starting to fail (want <= +10 ms, the probe's resolution)",
				"MISS  v2 1 s, check fails (interval 1s, fall 2): vipstack median 4100 ms, max 4100 ms (want median <= 2609 ms, fall x interval + skew)",
			},
		},
		{
			name: "vipstack filtered out: no target",
			trials: map[string][]outcome{
				key(implKeepalived, v3kill): {ok(200 * time.Millisecond)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := results{Scenarios: []scenario{v3kill, v2term, v2check}, Trials: tt.trials}
			if diff := cmp.Diff(tt.want, r.targets()); diff != "" {
				t.Errorf("targets() (-want +got):\n%s", diff)
			}
		})
	}
}

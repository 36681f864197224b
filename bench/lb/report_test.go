package main

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseWrk(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    wrkResult
		wantErr string
	}{
		{
			name: "keep-alive with errors",
			out: `Running 10s test @ http://127.0.0.1:9445/
  2 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     3.12ms    1.08ms  22.45ms   89.12%
    Req/Sec    10.20k     2.13k   13.24k    70.50%
  Latency Distribution
     50%  980.00us
     75%    1.52ms
     90%    2.34ms
     99%    5.37ms
  203412 requests in 10.00s, 21.14MB read
  Socket errors: connect 0, read 12, write 1, timeout 2
  Non-2xx or 3xx responses: 5
Requests/sec:  20334.52
Transfer/sec:      2.11MB
`,
			want: wrkResult{RPS: 20334.52, P50: 980 * time.Microsecond, P99: 5370 * time.Microsecond, Requests: 203412, Errors: 20},
		},
		{
			name: "seconds",
			out: `  Latency Distribution
     50%    1.20s
     99%    2.00s
  10 requests in 10.00s, 1.00KB read
Requests/sec:      1.00
`,
			want: wrkResult{RPS: 1, P50: 1200 * time.Millisecond, P99: 2 * time.Second, Requests: 10},
		},
		{name: "no latency distribution", out: "Requests/sec:  20334.52\n", wantErr: "--latency"},
		{name: "bad socket errors", out: "Socket errors: connect x\n", wantErr: "Socket errors"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseWrk(tt.out)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseWrk() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parseWrk() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseIperf3(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    float64
		wantErr string
	}{
		{name: "ok", out: `{"start":{},"end":{"sum_sent":{"bits_per_second":7.1e9},"sum_received":{"bits_per_second":6.9e9}}}`, want: 6.9e9},
		{name: "error", out: `{"error":"unable to connect to server: Connection refused"}`, wantErr: "Connection refused"},
		{name: "empty", out: `{}`, wantErr: "no end.sum_received"},
		{name: "not json", out: `iperf3: error`, wantErr: "iperf3 -J"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseIperf3([]byte(tt.out))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseIperf3() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("parseIperf3() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestVerdict(t *testing.T) {
	byName := metricsByName()
	tests := []struct {
		metric string
		ratio  float64
		want   string
	}{
		{metric: "keep-alive requests/s", ratio: 1.0, want: "PASS"},
		{metric: "keep-alive requests/s", ratio: 0.99, want: "MISS"},
		{metric: "new connections/s (Connection: close)", ratio: 1.3, want: "PASS"},
		{metric: "bulk throughput (iperf3, 1 stream)", ratio: 0.9, want: "PASS"},
		{metric: "bulk throughput (iperf3, 1 stream)", ratio: 0.89, want: "MISS"},
		{metric: nameOpenLoopP99, ratio: 1.1, want: "PASS"},
		{metric: nameOpenLoopP99, ratio: 1.11, want: "MISS"},
		{metric: nameKeepAliveP99, ratio: 3, want: ""}, // the open loop carries the target
		{metric: nameKeepAliveP50, ratio: 3, want: ""},
	}
	for _, tt := range tests {
		m, ok := byName[tt.metric]
		if !ok {
			t.Fatalf("no metric %q", tt.metric)
		}
		if got := m.verdict(tt.ratio); got != tt.want {
			t.Errorf("%s: verdict(%v) = %q, want %q", tt.metric, tt.ratio, got, tt.want)
		}
	}
}

func TestMedian(t *testing.T) {
	m := metrics()[0] // keep-alive requests/s
	tests := []struct {
		name   string
		rounds []figures
		want   float64
		wantOK bool
	}{
		{name: "none", rounds: nil},
		{name: "odd", rounds: keepAliveRounds(3, 1, 2), want: 2, wantOK: true},
		{name: "even", rounds: keepAliveRounds(4, 1, 2, 3), want: 2.5, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := m.median(tt.rounds)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("median() = %v, %v, want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestReportVipstackMissing(t *testing.T) {
	r := &results{
		Rounds:  map[string][]figures{implHAProxy: {{KeepAlive: wrkResult{RPS: 20000}}}},
		Skipped: "`vipstack lb --check` failed",
	}
	var b strings.Builder
	r.print(&b)
	out := b.String()
	for _, want := range []string{"keep-alive requests/s", "20.0k", "not run", "vipstack was not measured: `vipstack lb --check` failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "PASS") || strings.Contains(out, "MISS") {
		t.Errorf("report without vipstack has a verdict:\n%s", out)
	}
}

func TestRenderConfigSameButPorts(t *testing.T) {
	h := renderConfig(portsFor(implHAProxy), "/w/s.sock", false)
	v := renderConfig(portsFor(implVipstack), "/w/s.sock", false)
	hp, vp := portsFor(implHAProxy), portsFor(implVipstack)
	for _, p := range [][2]int{{hp.Main, vp.Main}, {hp.Bulk, vp.Bulk}, {hp.Monitor, vp.Monitor}, {hp.Stats, vp.Stats}} {
		h = strings.ReplaceAll(h, ":"+strconv.Itoa(p[0]), ":PORT")
		v = strings.ReplaceAll(v, ":"+strconv.Itoa(p[1]), ":PORT")
	}
	if diff := cmp.Diff(h, v); diff != "" {
		t.Errorf("configurations differ in more than the frontend ports (-haproxy +vipstack):\n%s", diff)
	}
}

func TestReportKill(t *testing.T) {
	tests := []struct {
		name   string
		kill   map[string]killResult
		want   []string
		absent []string
	}{
		{
			name: "vipstack loses none",
			kill: map[string]killResult{
				implHAProxy:  {Sent: 2400, Failed: 121, KilledAt: 4 * time.Second, FirstFail: 4 * time.Second, LastFail: 6 * time.Second, Kinds: map[string]int{"closed without an answer": 121}},
				implVipstack: {Sent: 2400, InFlight: 1, Kinds: map[string]int{"in flight at the kill: reset": 1}},
			},
			want: []string{"haproxy   2400", "121", "0.00..2.00 s after the kill", "closed without an answer 121", "in flight at the kill: reset 1", "tries another server): PASS"},
		},
		{
			name: "vipstack loses some",
			kill: map[string]killResult{
				implHAProxy:  {Sent: 2400},
				implVipstack: {Sent: 2400, Failed: 3, Kinds: map[string]int{"refused": 3}},
			},
			want: []string{"tries another server): MISS", "1 target(s) missed"},
		},
		{
			name:   "vipstack not run",
			kill:   map[string]killResult{implHAProxy: {Sent: 2400}},
			want:   []string{"not run"},
			absent: []string{"tries another server"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &results{Rounds: map[string][]figures{}, Kill: tt.kill, KillSpec: "test load"}
			var b strings.Builder
			r.print(&b)
			says(t, b.String(), tt.want, tt.absent)
		})
	}
}

// TestRoundRatios: each targeted metric gets one line with vipstack/haproxy
// per round, in round order, and the range; one round prints none.
func TestRoundRatios(t *testing.T) {
	round := func(rps, closeRPS float64, p99 time.Duration, bps float64) figures {
		return figures{KeepAlive: wrkResult{RPS: rps, P99: p99}, Close: wrkResult{RPS: closeRPS}, Bps: bps}
	}
	r := &results{Rounds: map[string][]figures{
		implHAProxy:  {round(100, 10, 10*time.Millisecond, 5), round(200, 10, 10*time.Millisecond, 5)},
		implVipstack: {round(120, 9, 8*time.Millisecond, 10), round(180, 11, 12*time.Millisecond, 0)},
	}}
	want := [][]string{
		{"keep-alive requests/s", "1.20 0.90", "0.90..1.20"},
		{nameKeepAliveP99, "0.80 1.20", "0.80..1.20"}, // no open loop: wrk's p99 has the target
		{"new connections/s (Connection: close)", "0.90 1.10", "0.90..1.10"},
		{"bulk throughput (iperf3, 1 stream)", "2.00 0.00", "0.00..2.00"},
	}
	if diff := cmp.Diff(want, r.roundRatios()); diff != "" {
		t.Errorf("roundRatios() (-want +got):\n%s", diff)
	}
	r.Rounds[implHAProxy] = r.Rounds[implHAProxy][:1]
	if got := r.roundRatios(); got != nil {
		t.Errorf("with one round: %q, want nothing", got)
	}
}

// TestFmtRatio: a ratio that two decimals would round onto its bound gets
// a third, so that "1.00 MISS" cannot be printed.
func TestFmtRatio(t *testing.T) {
	byName := metricsByName()
	tests := []struct {
		metric string
		ratio  float64
		want   string
	}{
		{"new connections/s (Connection: close)", 0.996, "0.996"},
		{"new connections/s (Connection: close)", 1.004, "1.004"},
		{"new connections/s (Connection: close)", 1.0, "1.00"},
		{"new connections/s (Connection: close)", 0.92, "0.92"},
		{nameOpenLoopP99, 1.104, "1.104"},
		{nameKeepAliveP50, 0.996, "1.00"}, // no bound: two decimals
	}
	for _, tt := range tests {
		if got := byName[tt.metric].fmtRatio(tt.ratio); got != tt.want {
			t.Errorf("%s: fmtRatio(%v) = %q, want %q", tt.metric, tt.ratio, got, tt.want)
		}
	}
}

// metricsByName indexes metrics() by name.
func metricsByName() map[string]metric {
	byName := map[string]metric{}
	for _, m := range metrics() {
		byName[m.name] = m
	}
	return byName
}

// TestPairedRatio: the ratio is taken inside each round's pair first, so a
// machine that gets faster between rounds does not move it; a round
// without a positive haproxy figure gives no ratio.
func TestPairedRatio(t *testing.T) {
	m := metricsByName()["keep-alive requests/s"]
	tests := []struct {
		name   string
		h, v   []figures
		want   float64
		wantOK bool
	}{
		{name: "none", h: nil, v: nil},
		{name: "haproxy only", h: keepAliveRounds(100), v: nil},
		{name: "one round", h: keepAliveRounds(100), v: keepAliveRounds(90), want: 0.9, wantOK: true},
		// The pairs say 1.2, 0.95 and 0.967: the median is 0.967, where
		// the ratio of the two medians (190/200) would say 0.95.
		{name: "odd", h: keepAliveRounds(100, 200, 300), v: keepAliveRounds(120, 190, 290), want: 290.0 / 300, wantOK: true},
		// The machine doubles its speed between rounds; each pair says 1.05.
		{name: "drift", h: keepAliveRounds(100, 200, 400, 800), v: keepAliveRounds(105, 210, 420, 840), want: 1.05, wantOK: true},
		{name: "even", h: keepAliveRounds(100, 200), v: keepAliveRounds(110, 180), want: 1.0, wantOK: true},
		{name: "zero haproxy figure", h: keepAliveRounds(100, 0), v: keepAliveRounds(100, 100)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := m.pairedRatio(tt.h, tt.v)
			if ok != tt.wantOK || math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("pairedRatio() = %v, %v, want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// keepAliveRounds are rounds with only keep-alive requests/s set, one per
// value.
func keepAliveRounds(v ...float64) []figures {
	var f []figures
	for _, x := range v {
		f = append(f, figures{KeepAlive: wrkResult{RPS: x}})
	}
	return f
}

func TestParseProcStatCPU(t *testing.T) {
	// Fields 14 and 15 (utime, stime) are 250 and 150 ticks.
	rest := " S 1 2 3 4 5 6 7 8 9 10 250 150 11 12 20 0 3 0 100 200 300"
	tests := []struct {
		name    string
		stat    string
		want    time.Duration
		wantErr string
	}{
		{name: "plain name", stat: "4242 (haproxy)" + rest, want: 4 * time.Second},
		{name: "name with spaces and parentheses", stat: "4242 (a (b) c)" + rest, want: 4 * time.Second},
		{name: "no name", stat: "4242 haproxy" + rest, wantErr: "no ')'"},
		{name: "cut short", stat: "4242 (vipstack) S 1 2 3", wantErr: "want at least 13"},
		{name: "not a number", stat: "4242 (x) S 1 2 3 4 5 6 7 8 9 10 abc 150 11", wantErr: `CPU time "abc"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcStatCPU(tt.stat)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseProcStatCPU() = %v, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parseProcStatCPU() = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// TestReportBalancerCPU: the CPU per request lines print each balancer's
// median, "-" for direct (no balancer) and vipstack/haproxy, with no target.
func TestReportBalancerCPU(t *testing.T) {
	round := func(ka, cl time.Duration) figures {
		return figures{KeepAlive: wrkResult{RPS: 1}, Close: wrkResult{RPS: 1}, Bps: 1, KeepAliveCPU: ka, CloseCPU: cl}
	}
	r := &results{Rounds: map[string][]figures{
		implDirect:   {{KeepAlive: wrkResult{RPS: 1}, Close: wrkResult{RPS: 1}, Bps: 1}},
		implHAProxy:  {round(20*time.Microsecond, 100*time.Microsecond)},
		implVipstack: {round(15*time.Microsecond, 110*time.Microsecond)},
	}}
	var b strings.Builder
	r.print(&b)
	var got []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "balancer CPU") {
			got = append(got, strings.Join(strings.Fields(l), " "))
		}
	}
	want := []string{
		"balancer CPU per keep-alive request - 20 us 15 us 0.75",
		"balancer CPU per new connection - 100 us 110 us 1.10",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CPU lines (-want +got):\n%s\nreport:\n%s", diff, b.String())
	}
}

func TestReportIdleMemory(t *testing.T) {
	tests := []struct {
		name       string
		mem        map[string]memResult
		want       []string
		wantNot    []string
		wantMisses string
	}{
		{
			name: "vipstack above haproxy",
			mem: map[string]memResult{
				implHAProxy:  {Conns: 2000, RSSBefore: 10, RSSAfter: 14, PSSBefore: 9, PSSAfter: 13, AnonBefore: 4, AnonAfter: 8},
				implVipstack: {Conns: 2000, RSSBefore: 20, RSSAfter: 32, PSSBefore: 20, PSSAfter: 31, AnonBefore: 8, AnonAfter: 20},
			},
			want: []string{"| haproxy | 2000 | 10.0 MiB | 14.0 MiB | 20.0 MiB | 20.0 MiB | 20.0 MiB |", "| vipstack | 2000 | 20.0 MiB | 32.0 MiB | 60.0 MiB | 55.0 MiB | 60.0 MiB |",
				"counted as anonymous memory: 3.00, MISS.", "file pages included: 60.0 against 20.0 MiB."},
			wantMisses: "1 target(s) missed.",
		},
		{
			name: "vipstack below haproxy",
			mem: map[string]memResult{
				implHAProxy:  {Conns: 5000, RSSBefore: 10, RSSAfter: 20, AnonBefore: 3, AnonAfter: 13},
				implVipstack: {Conns: 5000, RSSBefore: 20, RSSAfter: 25, AnonBefore: 8, AnonAfter: 13},
			},
			want:       []string{"| vipstack | 5000 | 20.0 MiB | 25.0 MiB | 10.0 MiB |", "counted as anonymous memory: 0.50, PASS."},
			wantMisses: "0 target(s) missed.",
		},
		{
			// The file pages a collection maps in the window do not
			// turn a PASS into a MISS: they are not the connections'.
			name: "vipstack's RSS above, its anonymous memory below",
			mem: map[string]memResult{
				implHAProxy:  {Conns: 3000, RSSBefore: 15, RSSAfter: 18.6, AnonBefore: 3, AnonAfter: 6.6},
				implVipstack: {Conns: 3000, RSSBefore: 26, RSSAfter: 33.2, AnonBefore: 9, AnonAfter: 10.8},
			},
			want:       []string{"counted as anonymous memory: 0.50, PASS.", "file pages included: 24.0 against 12.0 MiB."},
			wantMisses: "0 target(s) missed.",
		},
		{
			name:       "not run",
			want:       []string{"0 target(s) missed."},
			wantNot:    []string{"Idle HTTP connections"},
			wantMisses: "0 target(s) missed.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &results{Rounds: map[string][]figures{}, Mem: tt.mem}
			var b strings.Builder
			if err := r.report().Markdown(&b); err != nil {
				t.Fatal(err)
			}
			got := b.String()
			for _, w := range append(tt.want, tt.wantMisses) {
				if !strings.Contains(got, w) {
					t.Errorf("report lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(got, w) {
					t.Errorf("report has %q:\n%s", w, got)
				}
			}
		})
	}
}

func TestReportHTTPCloseP99(t *testing.T) {
	f := func(p99 time.Duration) figures {
		return figures{KeepAlive: wrkResult{RPS: 100, P99: time.Millisecond}, Close: wrkResult{RPS: 100, P99: p99}}
	}
	for _, tt := range []struct {
		http bool
		want string
	}{
		{http: false, want: "Connection: close p99 latency | - | 1.00 ms | 2.00 ms | 2.00 |  |  |"},
		{http: true, want: "Connection: close p99 latency | - | 1.00 ms | 2.00 ms | 2.00 | <= 1.1 | MISS |"},
	} {
		r := &results{HTTP: tt.http, Rounds: map[string][]figures{implHAProxy: {f(time.Millisecond)}, implVipstack: {f(2 * time.Millisecond)}}}
		var b strings.Builder
		if err := r.report().Markdown(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tt.want) {
			t.Errorf("HTTP %v: report lacks %q:\n%s", tt.http, tt.want, b.String())
		}
	}
}

// TestSummarizePaced checks the percentiles of the paced test: the
// latencies are sorted first, p99 is the value below which 99% fall.
func TestSummarizePaced(t *testing.T) {
	var lat []time.Duration
	for i := 200; i >= 1; i-- { // 1..200 ms, given in reverse
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	got := summarizePaced(lat, 5000)
	want := pacedResult{Rate: 5000, Requests: 200, P50: 101 * time.Millisecond, P99: 199 * time.Millisecond}
	if got != want {
		t.Errorf("summarizePaced = %+v, want %+v", got, want)
	}
	if got := summarizePaced(nil, 5000); got != (pacedResult{Rate: 5000}) {
		t.Errorf("summarizePaced(nil) = %+v, want only the rate", got)
	}
}

// TestReportPaced: the open-loop lines, with the keep-alive p99 target,
// and the text naming each round's rate are in the report when the open
// loop ran; without it wrk's p99 keeps the target, and the text says so.
func TestReportPaced(t *testing.T) {
	round := func(wrkP99, openP99 time.Duration, rate int) figures {
		return figures{KeepAlive: wrkResult{RPS: 20000, P50: 2 * time.Millisecond, P99: wrkP99}, Paced: pacedResult{Rate: rate, Requests: 100000, P50: openP99 / 4, P99: openP99}}
	}
	ms := time.Millisecond
	for _, tc := range []struct {
		name     string
		fraction float64
		h, v     []figures
		want     []string
		absent   []string
	}{
		{
			// vipstack's wrk p99 is worse (it ran at a higher rate);
			// at the same rate it is better: PASS.
			name: "auto rate, PASS", fraction: 0.75,
			h: []figures{round(6*ms, 2*ms, 15000), round(6*ms, 2*ms, 14800)}, v: []figures{round(9*ms, 1500*time.Microsecond, 15000), round(9*ms, 1500*time.Microsecond, 14800)},
			want: []string{
				"| " + nameKeepAliveP99 + " | - | 6.00 ms | 9.00 ms | 1.50 |  |  |",
				"| " + nameOpenLoopP99 + " | - | 2.00 ms | 1.50 ms | 0.75 | <= 1.1 | PASS |",
				"| " + nameOpenLoopP50 + " | - | 500 us | 375 us | 0.75 |  |  |",
				"(0.75 of haproxy's wrk keep-alive requests/s in that round; round 1 first: 15000 14800 a second) over 64 connections",
				"The keep-alive p99 target is judged there, at the same offered load",
				"so they are reported without a target.", "0 target(s) missed."},
			absent: []string{"No open loop ran", "fixed by -paced-rate", "note: round"},
		},
		{
			// The reverse: level under wrk, worse at the same rate: MISS.
			name: "fixed rate, MISS",
			h:    []figures{round(6*ms, 2*ms, 10000)}, v: []figures{round(6*ms, 3*ms, 10000)},
			want: []string{
				"| " + nameKeepAliveP99 + " | - | 6.00 ms | 6.00 ms | 1.00 |  |  |",
				"| " + nameOpenLoopP99 + " | - | 2.00 ms | 3.00 ms | 1.50 | <= 1.1 | MISS |",
				"(fixed by -paced-rate; round 1 first: 10000 a second)", "1 target(s) missed."},
		},
		{
			// haproxy's open-loop p50 (2.5 ms) above its wrk p50 (2 ms):
			// the rate was more than it sustained there.
			name: "haproxy overloaded in round 2", fraction: 0.75,
			h: []figures{round(6*ms, 2*ms, 15000), round(6*ms, 10*ms, 16000)}, v: []figures{round(9*ms, 2*ms, 15000), round(9*ms, 2*ms, 16000)},
			want:   []string{"note: round 2: haproxy's open-loop p50 2.50 ms is above its wrk p50 2.00 ms: 16000 GETs a second was more than it sustained in the open loop"},
			absent: []string{"note: round 1"},
		},
		{
			name: "no open loop: wrk's p99 keeps the target",
			h:    []figures{round(6*ms, 0, 0)}, v: []figures{round(9*ms, 0, 0)},
			want: []string{
				"| " + nameKeepAliveP99 + " | - | 6.00 ms | 9.00 ms | 1.50 | <= 1.1 | MISS |",
				"No open loop ran (-paced-rate 0): the keep-alive p99 target is judged on wrk's closed loop", "1 target(s) missed."},
			absent: []string{"open loop (one rate for all)", "Open loop: each round"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &results{PacedFraction: tc.fraction, Rounds: map[string][]figures{implHAProxy: tc.h, implVipstack: tc.v}}
			var b strings.Builder
			if err := r.report().Markdown(&b); err != nil {
				t.Fatal(err)
			}
			says(t, b.String(), tc.want, tc.absent)
		})
	}
}

// TestOpenLoopRate: -paced-rate auto follows haproxy's wrk keep-alive
// rate of the round; a number fixes the rate whatever haproxy did.
func TestOpenLoopRate(t *testing.T) {
	tests := []struct {
		name       string
		setting    int
		fraction   float64
		haproxyRPS float64
		want       int
		wantErr    string
	}{
		{name: "auto, rounded to 100", setting: pacedAuto, fraction: 0.75, haproxyRPS: 41523, want: 31100},
		{name: "auto, another round", setting: pacedAuto, fraction: 0.75, haproxyRPS: 38010, want: 28500},
		{name: "auto, the default fraction", setting: pacedAuto, fraction: defaultPacedFraction, haproxyRPS: 41523, want: 20800},
		{name: "auto, below 1000 not rounded to 100", setting: pacedAuto, fraction: 0.75, haproxyRPS: 850, want: 638},
		{name: "auto, at least 1", setting: pacedAuto, fraction: 0.75, haproxyRPS: 0.5, want: 1},
		{name: "auto, capped", setting: pacedAuto, fraction: 1, haproxyRPS: 250000, want: maxPacedRate},
		{name: "auto, haproxy served nothing", setting: pacedAuto, fraction: 0.75, haproxyRPS: 0, wantErr: "no open-loop rate"},
		{name: "fixed", setting: 10000, fraction: 0.75, haproxyRPS: 41523, want: 10000},
		{name: "fixed, haproxy's rate unknown", setting: 12000, fraction: 0.75, want: 12000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := openLoopRate(tt.setting, tt.fraction, tt.haproxyRPS)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("openLoopRate() = %d, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("openLoopRate() = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

// TestParsePacedRate: -paced-rate takes auto, 0 or a rate, and says what
// it accepts otherwise.
func TestParsePacedRate(t *testing.T) {
	tests := []struct {
		in      string
		want    int
		wantErr bool
	}{
		{in: "auto", want: pacedAuto},
		{in: "0", want: 0},
		{in: "10000", want: 10000},
		{in: "100000", want: 100000},
		{in: "100001", wantErr: true},
		{in: "-1", wantErr: true},
		{in: "fast", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parsePacedRate(tt.in)
		switch {
		case tt.wantErr && (err == nil || !strings.Contains(err.Error(), "want auto, 0 (no open loop) or 1..100000")):
			t.Errorf("parsePacedRate(%q) = %d, %v; want an error saying what it accepts", tt.in, got, err)
		case !tt.wantErr && (err != nil || got != tt.want):
			t.Errorf("parsePacedRate(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

// says fails t for each of want that text lacks and each of absent it
// has.
func says(t *testing.T, text string, want, absent []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("report lacks %q:\n%s", w, text)
		}
	}
	for _, a := range absent {
		if strings.Contains(text, a) {
			t.Errorf("report has %q:\n%s", a, text)
		}
	}
}

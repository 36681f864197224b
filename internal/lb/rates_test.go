package lb

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestRateCounter walks haproxy's freq_ctr arithmetic on a fake clock:
// the first steps replay what haproxy 2.6.12 showed after five sessions
// at once (measured, rates.go: 5 at 0.3 s and 0.8 s, 3 at 1.3 s, 0 at
// 1.8 s, rate_max 5), the next a count in each of two periods, then a
// gap of more than a period. rate_max is the most one period counted.
func TestRateCounter(t *testing.T) {
	clk := fakeClock()
	var r rateCounter
	steps := []struct {
		name     string
		advance  time.Duration // before the step
		events   int
		rate     uint64
		rateMax  int64
		periodAt time.Duration // the current period's start, from the first event
	}{
		{name: "five sessions", events: 5, rate: 5, rateMax: 5},
		{name: "0.315 s", advance: 315 * time.Millisecond, rate: 5, rateMax: 5},
		{name: "0.816 s", advance: 501 * time.Millisecond, rate: 5, rateMax: 5},
		{name: "1.321 s: 5 × 679/1000", advance: 505 * time.Millisecond, rate: 3, rateMax: 5},
		{name: "1.823 s: 5 × 177/1000", advance: 502 * time.Millisecond, rate: 0, rateMax: 5},
		{name: "2.2 s, 2 more: a period later, the 5 are 2 periods old", advance: 377 * time.Millisecond, events: 2, rate: 2, rateMax: 5, periodAt: 2200 * time.Millisecond},
		{name: "3.0 s, 4 more: the same period, 6", advance: 800 * time.Millisecond, events: 4, rate: 6, rateMax: 6, periodAt: 2200 * time.Millisecond},
		{name: "3.3 s, 4 more: the next period, 6 × 900/1000 + 4", advance: 300 * time.Millisecond, events: 4, rate: 9, rateMax: 6, periodAt: 3200 * time.Millisecond},
		{name: "8 s: nothing for more than a period", advance: 4700 * time.Millisecond, rate: 0, rateMax: 6, periodAt: 3200 * time.Millisecond},
		{name: "8 s, 1: a new period from now", events: 1, rate: 1, rateMax: 6, periodAt: 8 * time.Second},
	}
	first := clk.Now()
	for _, s := range steps {
		clk.Advance(s.advance)
		for range s.events {
			r.add(clk.Now())
		}
		if got := r.read(clk.Now()); got != s.rate {
			t.Errorf("%s: rate %d, want %d", s.name, got, s.rate)
		}
		if got := r.max.Load(); got != s.rateMax {
			t.Errorf("%s: rate_max %d, want %d", s.name, got, s.rateMax)
		}
		if got, want := r.start.Load(), first.Add(s.periodAt).UnixMilli(); got != want {
			t.Errorf("%s: period from %+d ms, want %+d", s.name, got-first.UnixMilli(), want-first.UnixMilli())
		}
	}
}

// TestSessionTimesArithmetic checks haproxy's swrate sums and averages:
// a plain sum divided, rounded up, by the sessions picked until 1024,
// with failed sessions in the divisor (measured, rates.go: samples of 203
// and 200 ms give a server picked twice 202 and its backend picked four
// times, twice for a refusing server, 101), then 1/1024 of the sum out per
// sample.
func TestSessionTimesArithmetic(t *testing.T) {
	var server, backend sessionTimes
	server.add(1, 0, 0, 203)
	backend.add(2, 0, 0, 203)
	server.add(2, 0, 1, 200)
	backend.add(4, 0, 1, 200)
	if diff := cmp.Diff(TimeStats{ConnectMS: 1, TotalMS: 202, MaxConnectMS: 1, MaxTotalMS: 203}, server.stats(2)); diff != "" {
		t.Errorf("server (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(TimeStats{ConnectMS: 1, TotalMS: 101, MaxConnectMS: 1, MaxTotalMS: 203}, backend.stats(4)); diff != "" {
		t.Errorf("backend (-want +got):\n%s", diff)
	}
	// None picked: the window is 1024 and the sums are 0.
	var none sessionTimes
	if diff := cmp.Diff(TimeStats{}, none.stats(0)); diff != "" {
		t.Errorf("never picked (-want +got):\n%s", diff)
	}

	// 1024 sessions of 100 ms, then the window slides: each sample takes
	// (sum+1023)/1024 out of the sum.
	var st sessionTimes
	for i := uint64(1); i <= timeSamples; i++ {
		st.add(i, 0, 0, 100)
	}
	if got := st.stats(timeSamples).TotalMS; got != 100 {
		t.Fatalf("1024 × 100 ms: average %d, want 100", got)
	}
	st.add(timeSamples+1, 0, 0, 1124) // 102400 - 100 + 1124 = 103424
	if got, want := st.t.Load(), uint64(103424); got != want {
		t.Errorf("sum after the 1025th sample %d, want %d", got, want)
	}
	if got := st.stats(timeSamples + 1).TotalMS; got != 101 {
		t.Errorf("average after the 1025th sample %d, want 101 (103424/1024 rounded up)", got)
	}
}

// TestLastSessionAge: -1 before any session, then now's second minus the
// session's, as haproxy's lastsess (measured: 1 at 0.6 s after sessions
// at x.3 s, the wall clock's second having turned).
func TestLastSessionAge(t *testing.T) {
	clk := fakeClock()
	var l lastSession
	if got := l.age(clk.Now()); got != -1 {
		t.Errorf("no session: %d, want -1", got)
	}
	clk.Advance(700 * time.Millisecond)
	l.set(clk.Now())
	for _, s := range []struct {
		advance time.Duration
		want    int64
	}{{0, 0}, {200 * time.Millisecond, 0}, {100 * time.Millisecond, 1}, {900 * time.Millisecond, 1}, {100 * time.Millisecond, 2}} {
		clk.Advance(s.advance)
		if got := l.age(clk.Now()); got != s.want {
			t.Errorf("at %v: %d, want %d", clk.Now().Sub(time.Unix(1_700_000_000, 0)), got, s.want)
		}
	}
}

// TestStatsRatesAndTimes runs clients through an LB on a fake clock, so
// that the times are exact: three clients connect to a (accepted,
// started and connected at the same clock reading), the clock moves 300
// ms, they close; b is in MAINT and never picked. Then the rates decay
// and the last session ages as the clock moves on. The stats, the CSV
// and the HTML page show them.
func TestStatsRatesAndTimes(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	clk := fakeClock()
	reg := prometheus.NewRegistry()
	l := newLBOpts(t, Options{Clock: clk, Registry: reg}, tcpConfig(lbconfig.RoundRobin, srv("a", a), srv("b", b)))
	if err := l.SetServerAdmin("be", "b", AdminMaint); err != nil {
		t.Fatal(err)
	}
	var cls []*client
	for range 3 {
		cl := dial(t, l, "fe")
		if g := cl.greeting(t); g != "a" {
			t.Fatalf("greeting %q, want a", g)
		}
		cls = append(cls, cl)
	}
	clk.Advance(300 * time.Millisecond)
	for _, cl := range cls {
		cl.Close()
	}
	eventually(t, "the three sessions' ends", func() bool { return l.serverStats(t, "be", "a").Sessions == 0 })

	times := TimeStats{TotalMS: 300, MaxTotalMS: 300}
	type line struct {
		Rate, MaxRate uint64
		Last          int64
		Times         TimeStats
	}
	steps := []struct {
		name         string
		advance      time.Duration
		fe           [2]uint64 // rate, rate_max
		a, be, never line
	}{
		{name: "0.3 s", fe: [2]uint64{3, 3}, a: line{3, 3, 0, times}, be: line{3, 3, 0, times}, never: line{0, 0, -1, TimeStats{}}},
		{name: "1.3 s: 3 × 700/1000", advance: time.Second, fe: [2]uint64{2, 3}, a: line{2, 3, 1, times}, be: line{2, 3, 1, times}, never: line{0, 0, -1, TimeStats{}}},
		{name: "2.1 s", advance: 800 * time.Millisecond, fe: [2]uint64{0, 3}, a: line{0, 3, 2, times}, be: line{0, 3, 2, times}, never: line{0, 0, -1, TimeStats{}}},
	}
	for _, s := range steps {
		clk.Advance(s.advance)
		snap := l.Snapshot()
		f := snap.Frontends[0]
		if got := [2]uint64{f.Rate, f.MaxRate}; got != s.fe {
			t.Errorf("%s: frontend rate, rate_max %v, want %v", s.name, got, s.fe)
		}
		be := snap.Backends[0]
		got := map[string]line{
			"a":  {be.Servers[0].Rate, be.Servers[0].MaxRate, be.Servers[0].LastSessionSeconds, be.Servers[0].Times},
			"b":  {be.Servers[1].Rate, be.Servers[1].MaxRate, be.Servers[1].LastSessionSeconds, be.Servers[1].Times},
			"be": {be.Rate, be.MaxRate, be.LastSessionSeconds, be.Times},
		}
		if diff := cmp.Diff(map[string]line{"a": s.a, "b": s.never, "be": s.be}, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, diff)
		}
	}

	// A reload keeps the counts: the servers', and the backend's by name.
	if err := l.Apply(tcpConfig(lbconfig.RoundRobin, srv("a", a), srv("b", b))); err != nil {
		t.Fatal(err)
	}
	be := l.Snapshot().Backends[0]
	if got := [4]int64{int64(be.MaxRate), be.LastSessionSeconds, int64(be.Servers[0].MaxRate), int64(be.Times.TotalMS)}; got != [4]int64{3, 2, 3, 300} {
		t.Errorf("after a reload: backend rate_max, lastsess, a's rate_max, backend ttime %v, want [3 2 3 300]", got)
	}
	// A renamed server (same address) takes its counts over.
	renamed := srv("a2", a)
	if err := l.Apply(tcpConfig(lbconfig.RoundRobin, renamed, srv("b", b))); err != nil {
		t.Fatal(err)
	}
	s0 := l.Snapshot().Backends[0].Servers[0]
	if got := [4]int64{int64(s0.MaxRate), s0.LastSessionSeconds, int64(s0.Times.TotalMS), int64(s0.Times.MaxTotalMS)}; got != [4]int64{3, 2, 300, 300} {
		t.Errorf("a renamed a2: rate_max, lastsess, ttime, ttime_max %v, want [3 2 300 300]", got)
	}
	if err := l.Apply(tcpConfig(lbconfig.RoundRobin, srv("a", a), srv("b", b))); err != nil {
		t.Fatal(err)
	}

	// Prometheus, at 2.1 s: b has no last session.
	m := gather(t, reg)
	for k, v := range map[string]float64{
		`vipstack_lb_server_total_time_average_seconds{backend="be",server="a"}`:   0.3,
		`vipstack_lb_server_connect_time_average_seconds{backend="be",server="a"}`: 0,
		`vipstack_lb_backend_total_time_average_seconds{backend="be"}`:             0.3,
		`vipstack_lb_server_last_session_seconds{backend="be",server="a"}`:         2,
		`vipstack_lb_backend_last_session_seconds{backend="be"}`:                   2,
	} {
		if g, ok := m[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if _, ok := m[`vipstack_lb_server_last_session_seconds{backend="be",server="b"}`]; ok {
		t.Errorf("b, never picked, has a last session metric")
	}

	// The CSV and the page, at 2.1 s.
	snap := l.Snapshot()
	csv := snap.CSV()
	for _, want := range []string{
		// rate, rate_lim, rate_max ... conn_rate, conn_rate_max, conn_tot
		"fe,FRONTEND,", ",0,0,3,", ",0,3,3,",
	} {
		if !strings.Contains(csv, want) {
			t.Errorf("CSV has no %q:\n%s", want, csv)
		}
	}
	recs := snap.records()
	check := func(r *statRecord, want map[string]string) {
		t.Helper()
		for name, w := range want {
			i := statColumn[name]
			got := ""
			if r.set[i] {
				got = r.number(i, r.tags(name))
			}
			if got != w {
				t.Errorf("%s/%s %s = %q, want %q", r.text("pxname"), r.text("svname"), name, got, w)
			}
		}
	}
	check(recs[0], map[string]string{"rate": "0", "rate_max": "3", "conn_rate": "0", "conn_rate_max": "3", "conn_tot": "3", "lastsess": "", "ttime": ""})
	check(recs[1], map[string]string{"rate": "0", "rate_max": "3", "lastsess": "2", "qtime": "0", "ctime": "0", "rtime": "0", "ttime": "300", "ttime_max": "300"})
	check(recs[2], map[string]string{"rate": "0", "rate_max": "0", "lastsess": "-1", "ttime": "0", "ttime_max": "0"})
	check(recs[3], map[string]string{"rate": "0", "rate_max": "3", "lastsess": "2", "ttime": "300", "ttime_max": "300"})
	var pb strings.Builder
	htmlProxies(&pb, snap)
	page := pb.String()
	for _, want := range []string{
		"<tr><th>Max connection rate:</th><td>3/s</td></tr><tr><th>Max session rate:</th><td>3/s</td></tr>",
		"<tr><th>- Total time:</th><td>300 / 300</td><td>ms</td></tr>",
		"<td>?</td>", // b's last session
	} {
		if !strings.Contains(page, want) {
			t.Errorf("HTML page has no %q", want)
		}
	}
}

// TestRateCounterConcurrent: adds from many goroutines around a period's
// rollover lose none: the previous and current counts hold them all
// (run with -race, the counter's lock bit is the only guard).
func TestRateCounterConcurrent(t *testing.T) {
	t0 := fakeClock().Now()
	var r rateCounter
	const workers, each = 8, 1000
	done := make(chan struct{})
	for range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range each {
				at := t0
				if i >= each/2 {
					at = t0.Add(1500 * time.Millisecond) // the next period
				}
				r.add(at)
			}
		}()
	}
	for range workers {
		<-done
	}
	if got := r.prev.Load() + r.curr.Load(); got != workers*each {
		t.Errorf("previous %d + current %d = %d, want %d", r.prev.Load(), r.curr.Load(), got, workers*each)
	}
	if got, want := r.start.Load(), t0.Add(time.Second).UnixMilli(); got != want {
		t.Errorf("period from %d, want %d", got, want)
	}
}

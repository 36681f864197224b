package lb

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

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
	if err := l.SetServerAdmin("be", "b", stats.AdminMaint); err != nil {
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

	times := stats.TimeStats{TotalMS: 300, MaxTotalMS: 300}
	type line struct {
		Rate, MaxRate uint64
		Last          int64
		Times         stats.TimeStats
	}
	steps := []struct {
		name         string
		advance      time.Duration
		fe           [2]uint64 // rate, rate_max
		a, be, never line
	}{
		{name: "0.3 s", fe: [2]uint64{3, 3}, a: line{3, 3, 0, times}, be: line{3, 3, 0, times}, never: line{0, 0, -1, stats.TimeStats{}}},
		{name: "1.3 s: 3 × 700/1000", advance: time.Second, fe: [2]uint64{2, 3}, a: line{2, 3, 1, times}, be: line{2, 3, 1, times}, never: line{0, 0, -1, stats.TimeStats{}}},
		{name: "2.1 s", advance: 800 * time.Millisecond, fe: [2]uint64{0, 3}, a: line{0, 3, 2, times}, be: line{0, 3, 2, times}, never: line{0, 0, -1, stats.TimeStats{}}},
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
	check := func(pxname, svname string, want map[string]string) {
		t.Helper()
		got := csvFields(t, csv, pxname, svname)
		for name, w := range want {
			if got[name] != w {
				t.Errorf("%s/%s %s = %q, want %q", pxname, svname, name, got[name], w)
			}
		}
	}
	check("fe", "FRONTEND", map[string]string{"rate": "0", "rate_max": "3", "conn_rate": "0", "conn_rate_max": "3", "conn_tot": "3", "lastsess": "", "ttime": ""})
	check("be", "a", map[string]string{"rate": "0", "rate_max": "3", "lastsess": "2", "qtime": "0", "ctime": "0", "rtime": "0", "ttime": "300", "ttime_max": "300"})
	check("be", "b", map[string]string{"rate": "0", "rate_max": "0", "lastsess": "-1", "ttime": "0", "ttime_max": "0"})
	check("be", "BACKEND", map[string]string{"rate": "0", "rate_max": "3", "lastsess": "2", "ttime": "300", "ttime_max": "300"})
	page := snap.HTML(stats.Page{})
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

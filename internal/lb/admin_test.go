package lb

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// greetings opens n connections through the LB and returns the backends
// that answered, in order.
func greetings(t *testing.T, l *LB, n int) string {
	t.Helper()
	var got strings.Builder
	for range n {
		cl := dial(t, l, "fe")
		got.WriteString(cl.greeting(t))
		cl.Close()
	}
	return got.String()
}

// TestAdminStates walks a server through drain, maint and back, as the
// runtime API's `set server ... state` does: no new connection reaches a
// drained or maintained server, its established connections go on, its
// stats line says DRAIN or MAINT, and a reload keeps the state.
func TestAdminStates(t *testing.T) {
	a, b, c := startBackend(t, "a"), startBackend(t, "b"), startBackend(t, "c")
	cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a), srv("b", b), srv("c", c))
	l := newLB(t, fakeClock(), cfg)
	if got := greetings(t, l, 3); got != "abc" {
		t.Fatalf("before any state change: %q, want abc", got)
	}
	// An established connection to b, before b is drained.
	var onB *client
	for onB == nil {
		cl := dial(t, l, "fe")
		if cl.greeting(t) == "b" {
			onB = cl
		} else {
			cl.Close()
		}
	}

	steps := []struct {
		name      string
		st        stats.AdminState
		want      string // backends of 6 new connections
		status    string // b's stats status
		healthy   bool
		backendUp int
	}{
		{name: "drain", st: stats.AdminDrain, want: "acacac", status: "DRAIN", healthy: true, backendUp: 2},
		{name: "maint", st: stats.AdminMaint, want: "acacac", status: "MAINT", healthy: true, backendUp: 2},
		{name: "ready", st: stats.AdminReady, want: "abcabc", status: "no check", healthy: true, backendUp: 3},
	}
	for _, step := range steps {
		if err := l.SetServerAdmin("be", "b", step.st); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		got := greetings(t, l, 6)
		// Round robin resumes from its current weights, so compare which
		// servers took connections, not how many each.
		if diff := cmp.Diff(servedBy(step.want), servedBy(got)); diff != "" {
			t.Errorf("%s: new connections went to %q (-want +got):\n%s", step.name, got, diff)
		}
		s := l.serverStats(t, "be", "b")
		if s.Status != step.status || s.Admin != step.st {
			t.Errorf("%s: b's status %q admin %v, want %q %v", step.name, s.Status, s.Admin, step.status, step.st)
		}
		if got := l.Healthy(); got != step.healthy {
			t.Errorf("%s: Healthy() = %v, want %v", step.name, got, step.healthy)
		}
		var be stats.BackendStats
		for _, x := range l.Snapshot().Backends {
			be = x
		}
		if be.UpServers != step.backendUp {
			t.Errorf("%s: backend's usable servers %d, want %d", step.name, be.UpServers, step.backendUp)
		}
		// The connection made before the drain still works.
		onB.echo(t, "still here after "+step.name)
	}

	// Every server in maint: nothing may take a client, the LB is not
	// healthy (the monitor answers 503), and a new client is closed.
	for _, name := range []string{"a", "b", "c"} {
		if err := l.SetServerAdmin("be", name, stats.AdminMaint); err != nil {
			t.Fatal(err)
		}
	}
	if l.Healthy() {
		t.Error("Healthy() with every server in maint, want false")
	}
	if cl := dial(t, l, "fe"); !cl.closed(t) {
		t.Error("a client was served with every server in maint")
	}
	// A reload of the same servers keeps their state.
	if err := l.Apply(tcpConfig(lbconfig.RoundRobin, srv("a", a), srv("b", b), srv("c", c))); err != nil {
		t.Fatal(err)
	}
	if s := l.serverStats(t, "be", "a"); s.Admin != stats.AdminMaint {
		t.Errorf("a after a reload: admin %v, want maint (kept)", s.Admin)
	}
	if err := l.SetServerAdmin("be", "c", stats.AdminReady); err != nil {
		t.Fatal(err)
	}
	if got := greetings(t, l, 2); got != "cc" {
		t.Errorf("with only c ready: %q, want cc", got)
	}
	if !l.Healthy() {
		t.Error("Healthy() with c ready, want true")
	}

	if err := l.SetServerAdmin("nope", "a", stats.AdminMaint); !errors.Is(err, ErrNoBackend) {
		t.Errorf("unknown backend: %v, want ErrNoBackend", err)
	}
	if err := l.SetServerAdmin("be", "zz", stats.AdminMaint); !errors.Is(err, ErrNoServer) {
		t.Errorf("unknown server: %v, want ErrNoServer", err)
	}
}

// servedBy is the set of backends in a string of greetings.
func servedBy(s string) map[rune]bool {
	m := map[rune]bool{}
	for _, r := range s {
		m[r] = true
	}
	return m
}

// TestMaintPausesCheck: in maint a server's health check stops (its
// stats show no check status, as haproxy's MAINT line); leaving maint the
// server is UP at once, on the edge of UP ("UP 1/2" with fall 2, as
// haproxy shows it), and its check runs again at once: one failed check
// and it goes DOWN.
func TestMaintPausesCheck(t *testing.T) {
	a := startBackend(t, "a")
	clk := fakeClock()
	s := lbconfig.Server{Name: "a", Addr: a.addr, Weight: 1, Check: true, Inter: time.Second, Fall: 2, Rise: 3}
	l := newLB(t, clk, tcpConfig(lbconfig.RoundRobin, s))
	eventually(t, "a's first check", func() bool { return checksDone(l.serverStats(t, "be", "a")) == 1 })
	if err := l.SetServerAdmin("be", "a", stats.AdminMaint); err != nil {
		t.Fatal(err)
	}
	st := l.serverStats(t, "be", "a")
	if st.Status != "MAINT" || st.CheckStatus != "L4OK" || st.Up || st.Downs != 1 {
		t.Fatalf("a in maint: status %q check %q up %v downs %d, want MAINT, the last check's L4OK, down, 1 down",
			st.Status, st.CheckStatus, st.Up, st.Downs)
	}
	// The stats CSV line leaves the paused check out, as haproxy's does.
	for _, line := range strings.Split(l.Snapshot().CSV(), "\n") {
		if strings.HasPrefix(line, "be,a,") && (!strings.Contains(line, ",MAINT,") || strings.Contains(line, "L4OK")) {
			t.Errorf("a's CSV line in maint: %s", line)
		}
	}
	if c := l.serverFor(t, "be", "a"); c.checker != nil {
		t.Fatal("a's checker still runs in maint")
	}
	// Time passes in maint: no check runs.
	before := checksDone(st)
	clk.Advance(5 * time.Second)
	if got := checksDone(l.serverStats(t, "be", "a")); got != before {
		t.Fatalf("checks ran in maint: %d, want %d", got, before)
	}

	// Leaving maint, a is UP at once (a runs: its check agrees).
	if err := l.SetServerAdmin("be", "a", stats.AdminReady); err != nil {
		t.Fatal(err)
	}
	if st := l.serverStats(t, "be", "a"); !st.Up {
		t.Fatalf("a right after leaving maint: %+v, want UP at once", st)
	}
	// a dies in maint. Leaving maint puts it on the edge of UP ("UP 1/2"
	// with fall 2): its check runs again at once, and the first failure
	// takes it DOWN.
	if err := l.SetServerAdmin("be", "a", stats.AdminMaint); err != nil {
		t.Fatal(err)
	}
	a.stop()
	failed := l.serverStats(t, "be", "a").CheckResults["L4CON"]
	if err := l.SetServerAdmin("be", "a", stats.AdminReady); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a to go DOWN", func() bool { return !l.serverStats(t, "be", "a").Up })
	st = l.serverStats(t, "be", "a")
	if n := st.CheckResults["L4CON"] - failed; n != 1 {
		t.Errorf("a went DOWN after %d failed checks, want 1 (leaving maint puts it on the edge of UP)", n)
	}
	if st.Downs != 3 {
		t.Errorf("a's downs after two maints and a real failure: %d, want 3", st.Downs)
	}
}

// TestStatFilter: `show stat <iid> <type> <sid>`, "no-maint" and "up".
func TestStatFilter(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a), srv("b", b))
	l := newLB(t, fakeClock(), cfg)
	if err := l.SetServerAdmin("be", "b", stats.AdminMaint); err != nil {
		t.Fatal(err)
	}
	snap := l.Snapshot()
	lines := func(f stats.StatFilter) []string {
		var out []string
		for _, line := range strings.Split(strings.TrimSpace(snap.Filter(f).CSV()), "\n")[1:] {
			px, rest, _ := strings.Cut(line, ",")
			sv, _, _ := strings.Cut(rest, ",")
			out = append(out, px+"/"+sv)
		}
		return out
	}
	be := snap.ProxyID("be")
	if be == 0 || snap.ProxyID("fe") == 0 || snap.ProxyID("nope") != 0 {
		t.Fatalf("ProxyID: fe %d be %d nope %d", snap.ProxyID("fe"), be, snap.ProxyID("nope"))
	}
	tests := []struct {
		name string
		f    stats.StatFilter
		want []string
	}{
		{"all", stats.StatFilter{ProxyID: -1, Types: -1, ServerID: -1}, []string{"fe/FRONTEND", "be/a", "be/b", "be/BACKEND"}},
		{"servers of be", stats.StatFilter{ProxyID: be, Types: 4, ServerID: -1}, []string{"be/a", "be/b"}},
		{"backend line", stats.StatFilter{ProxyID: be, Types: 2, ServerID: -1}, []string{"be/BACKEND"}},
		{"server 2", stats.StatFilter{ProxyID: be, Types: 4, ServerID: 2}, []string{"be/b"}},
		{"frontends", stats.StatFilter{ProxyID: -1, Types: 1, ServerID: -1}, []string{"fe/FRONTEND"}},
		{"no-maint", stats.StatFilter{ProxyID: -1, Types: -1, ServerID: -1, NoMaint: true}, []string{"fe/FRONTEND", "be/a", "be/BACKEND"}},
		{"up", stats.StatFilter{ProxyID: -1, Types: -1, ServerID: -1, UpOnly: true}, []string{"fe/FRONTEND", "be/a", "be/BACKEND"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, lines(tt.f)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	if !strings.Contains(snap.CSV(), "be,b,") || !strings.Contains(snap.CSV(), ",MAINT,") {
		t.Errorf("b's CSV line does not say MAINT:\n%s", snap.CSV())
	}
}

package lb

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/lb/logging"
	"github.com/vipstack/vipstack/internal/lb/logging/logtest"
	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
	"github.com/vipstack/vipstack/internal/syncbuf"
)

// TestSyslogReload: a reload that changes a frontend's target sends the
// next line to the new one only; a target with no socket yet does not
// stop the LB (it relays, its lines are dropped and counted, vipstack's
// log says so once), and its lines arrive once the socket exists and the
// retry delay has passed on the LB's clock.
func TestSyslogReload(t *testing.T) {
	a := startBackend(t, "a")
	dir := t.TempDir()
	target := func(name string) []lbconfig.LogTarget {
		return []lbconfig.LogTarget{{Network: "unixgram", Address: dir + "/" + name, Facility: 16, Level: lbconfig.LevelDebug}}
	}
	first, second := logtest.ListenUnixgram(t, dir+"/first"), logtest.ListenUnixgram(t, dir+"/second")
	cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a))
	cfg.Frontends[0].LogTargets = target("first")
	var logged syncbuf.Buffer
	clk := fakeClock()
	l := newLBOpts(t, Options{Clock: clk, Logger: slog.New(slog.NewTextHandler(&logged, nil))}, cfg)
	connect := func() {
		t.Helper()
		c := dial(t, l, "fe")
		c.greeting(t)
		c.Close()
		l.accessLog.Flush()
	}
	isConnect := func(d string) bool {
		return strings.HasPrefix(d, "<134>") && strings.Contains(d, "haproxy[") && strings.HasSuffix(d, " (fe/TCP)\n")
	}
	connect()
	if d := logtest.ReadDatagram(t, first, bound); !isConnect(d) {
		t.Fatalf("first target got %q, want a Connect line", d)
	}

	cfg.Frontends[0].LogTargets = target("second")
	if err := l.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	connect()
	if d := logtest.ReadDatagram(t, second, bound); !isConnect(d) {
		t.Errorf("after the reload, the second target got %q, want a Connect line", d)
	}
	first.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, err := first.Read(make([]byte, 1024)); err == nil {
		t.Errorf("after the reload, the first target still got %d bytes", n)
	}

	cfg.Frontends[0].LogTargets = target("later")
	if err := l.Apply(cfg); err != nil {
		t.Fatalf("Apply with a log target that cannot be reached: %v", err)
	}
	dropped := l.accessLog.Dropped()
	connect()
	clk.Advance(logging.Retry) // tried again, failing again: not reported again
	connect()
	if got := l.accessLog.Dropped() - dropped; got != 2 {
		t.Errorf("%d lines dropped for the missing socket, want 2", got)
	}
	if n := strings.Count(logged.String(), "log target: cannot send"); n != 1 {
		t.Errorf("vipstack's log says %d times that the target fails, want once:\n%s", n, logged.String())
	}
	if !strings.Contains(logged.String(), "target="+dir+"/later") {
		t.Errorf("vipstack's log does not name the target:\n%s", logged.String())
	}
	later := logtest.ListenUnixgram(t, dir+"/later")
	clk.Advance(logging.Retry)
	connect()
	if d := logtest.ReadDatagram(t, later, bound); !isConnect(d) {
		t.Errorf("once the socket exists, it got %q, want a Connect line", d)
	}
	if !strings.Contains(logged.String(), "log target: sending again") {
		t.Errorf("vipstack's log does not say the target works again:\n%s", logged.String())
	}
}

// TestBackendClients: a backend counts each client once, as haproxy's
// be_counters.cum_conn (stot, the soft stop's BE): served, failed after
// its retries, or with no server UP to try (NOSRV; measured, 2.6.12:
// three such clients give "Proxy be stopped (cumulated conns: FE: 0, BE:
// 3).").
func TestBackendClients(t *testing.T) {
	for _, tt := range []struct {
		name string
		b    stats.BackendStats
		want uint64
	}{
		{"served", stats.BackendStats{TotalSessions: 3}, 3},
		{"no server UP", stats.BackendStats{NoServer: 3}, 3},
		{"refused after retries 3", stats.BackendStats{ConnectErrors: 4, Retries: 3}, 1},
		{"all three", stats.BackendStats{TotalSessions: 2, ConnectErrors: 4, Retries: 3, NoServer: 1}, 4},
		{"a retry read before its error", stats.BackendStats{ConnectErrors: 1, Retries: 2}, 0},
	} {
		if got := tt.b.Clients(); got != tt.want {
			t.Errorf("%s: %+v: Clients() = %d, want %d", tt.name, tt.b, got, tt.want)
		}
	}
}

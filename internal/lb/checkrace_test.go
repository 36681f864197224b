package lb

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
	"github.com/vipstack/vipstack/internal/syncbuf"
)

// holdingHandler holds every message that contains hold until release
// is closed, and tells entered of the first one held; the others pass at
// once (a handler writing to one writer would hold them all behind it).
type holdingHandler struct {
	hold    string
	entered chan struct{}
	release chan struct{}
	once    *sync.Once
}

func (h holdingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h holdingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h holdingHandler) WithGroup(string) slog.Handler            { return h }
func (h holdingHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.hold) {
		h.once.Do(func() { close(h.entered) })
		<-h.release
	}
	return nil
}

// runningCheckers counts the goroutines of the process that run a
// server's health check, from their start (a goroutine started but not
// yet in its checker's Run counts too).
func runningCheckers() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "created by github.com/vipstack/vipstack/internal/lb.(*server).startCheck")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// TestCheckRestartRace: a reload that restarts a server's check and the
// runtime API taking the server out of MAINT at the same moment leave
// one checker, with the reload's settings, and Shutdown stops it. Before,
// each caller stopped the checker it saw and started its own: the
// reload, waiting for the old checker to end (here held in a log write),
// started one over the API's, which ran on unstopped, probing and
// logging after Shutdown (found in review; with -race, a loop of the two
// calls leaked one within a few hundred iterations).
func TestCheckRestartRace(t *testing.T) {
	eventually(t, "no checker running before the test", func() bool { return runningCheckers() == 0 })
	a := startBackend(t, "a")
	cfg := func(inter time.Duration) *lbconfig.Config {
		c := tcpConfig(lbconfig.RoundRobin, lbconfig.Server{Name: "a", Addr: a.addr, Weight: 1, Check: true, Inter: inter, Rise: 1, Fall: 1})
		c.Backends[0].LogHealthChecks = true
		return c
	}
	w := holdingHandler{hold: "Health check for server be/a failed", entered: make(chan struct{}), release: make(chan struct{}), once: new(sync.Once)}
	clk := fakeClock()
	l := newLBOpts(t, Options{Clock: clk, Logger: slog.New(w)}, cfg(time.Second))
	eventually(t, "a's first check", func() bool { return checksDone(l.serverStats(t, "be", "a")) == 1 })

	// The checker's next check fails, and its log line is held: the
	// checker cannot end until it is written.
	a.stop()
	clk.Advance(time.Second)
	<-w.entered

	// The reload restarts the check (a new inter) and waits for the old
	// checker to end.
	s := l.serverFor(t, "be", "a")
	applied := make(chan error, 1)
	go func() { applied <- l.Apply(cfg(2 * time.Second)) }()
	eventually(t, "the reload to stop the old checker", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.checker == nil
	})
	// Meanwhile the runtime API takes the server into MAINT and out.
	admin := make(chan error, 1)
	go func() {
		err := l.SetServerAdmin("be", "a", stats.AdminMaint)
		if err == nil {
			err = l.SetServerAdmin("be", "a", stats.AdminReady)
		}
		admin <- err
	}()
	var adminErr error
	adminDone := false
	select {
	case adminErr = <-admin: // the old code: done while the reload waits
		adminDone = true
	case <-time.After(500 * time.Millisecond): // the fixed code: waits for the reload's restart (not an assertion)
	}
	close(w.release)
	if err := <-applied; err != nil {
		t.Fatal(err)
	}
	if !adminDone {
		adminErr = <-admin
	}
	if adminErr != nil {
		t.Fatal(adminErr)
	}
	// A stopped checker's goroutine ends just after it says it is done.
	eventually(t, "one checker running for the one server", func() bool { return runningCheckers() == 1 })
	s.mu.Lock()
	inter := s.check.inter
	s.mu.Unlock()
	if inter != 2*time.Second {
		t.Errorf("the server checks every %v, want the reload's 2s", inter)
	}
	l.Shutdown(canceled())
	eventually(t, "no checker running after Shutdown", func() bool { return runningCheckers() == 0 })
}

// TestRetiredServer: a runtime API call that found a server before a
// reload removed it (or renamed it, giving its state to the new name)
// changes nothing and gets ErrNoServer, and the server's check does not
// start again. Before, taking a removed server out of MAINT restarted its
// check after the reload had stopped it: a checker of a server nobody
// saw ran on, probing and logging, after Shutdown (found in review).
func TestRetiredServer(t *testing.T) {
	eventually(t, "no checker running before the test", func() bool { return runningCheckers() == 0 })
	a, b := startBackend(t, "a"), startBackend(t, "b")
	srv := func(name string, addr netip.AddrPort) lbconfig.Server {
		return lbconfig.Server{Name: name, Addr: addr, Weight: 1, Check: true, Inter: time.Second, Rise: 1, Fall: 1}
	}
	l := newLBOpts(t, Options{Clock: fakeClock()}, tcpConfig(lbconfig.RoundRobin, srv("a", a.addr), srv("b", b.addr)))
	eventually(t, "two checkers", func() bool { return runningCheckers() == 2 })

	t.Run("removed", func(t *testing.T) {
		if err := l.SetServerAdmin("be", "a", stats.AdminMaint); err != nil {
			t.Fatal(err)
		}
		old := l.serverFor(t, "be", "a")
		if err := l.Apply(tcpConfig(lbconfig.RoundRobin, srv("b", b.addr))); err != nil {
			t.Fatal(err)
		}
		if old.setAdmin(stats.AdminReady) {
			t.Error("a removed server left MAINT")
		}
		if err := old.setWeight(lbconfig.RoundRobin, 7); !errors.Is(err, ErrNoServer) {
			t.Errorf("weight of a removed server: err %v, want ErrNoServer", err)
		}
		eventually(t, "b's checker alone", func() bool { return runningCheckers() == 1 })
		if stats.AdminState(old.admin.Load()) != stats.AdminMaint {
			t.Errorf("the removed server's admin state changed to %v", stats.AdminState(old.admin.Load()))
		}
	})

	t.Run("renamed", func(t *testing.T) {
		if err := l.SetServerAdmin("be", "b", stats.AdminMaint); err != nil {
			t.Fatal(err)
		}
		old := l.serverFor(t, "be", "b")
		if err := l.Apply(tcpConfig(lbconfig.RoundRobin, srv("b2", b.addr))); err != nil {
			t.Fatal(err)
		}
		s := l.serverFor(t, "be", "b2")
		if got := stats.AdminState(s.admin.Load()); got != stats.AdminMaint || s.up.Load() {
			t.Fatalf("the renamed server is %v, up %v; want MAINT, down", got, s.up.Load())
		}
		if old.setAdmin(stats.AdminReady) {
			t.Error("the server under its old name left MAINT after the rename")
		}
		if err := old.setWeight(lbconfig.RoundRobin, 7); !errors.Is(err, ErrNoServer) {
			t.Errorf("weight of the server under its old name: err %v, want ErrNoServer", err)
		}
		if cur, _ := s.weight.get(); cur != 1 {
			t.Errorf("the renamed server's weight is %d, want 1", cur)
		}
		if runningCheckers() != 0 {
			t.Errorf("%d checker(s) running with every server in MAINT", runningCheckers())
		}
		// Under its new name it leaves MAINT and is checked again.
		if err := l.SetServerAdmin("be", "b2", stats.AdminReady); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the renamed server's checker", func() bool { return runningCheckers() == 1 })
	})
	l.Shutdown(canceled())
	eventually(t, "no checker running after Shutdown", func() bool { return runningCheckers() == 0 })
}

// TestNoServerLineOnce: a check taking the backend's last server DOWN
// while the runtime API takes it into MAINT announces "backend be has no
// server available!" once, as haproxy, whose state changes are
// serialized, does. Before, each counted the usable servers on its own:
// the API counted one before the move, the check then took the server
// DOWN and counted none (its line), and the API counted none after its
// move (a second line). The hook holds the API between its count and its
// move while the check runs.
func TestNoServerLineOnce(t *testing.T) {
	a := startBackend(t, "a")
	cfg := tcpConfig(lbconfig.RoundRobin, lbconfig.Server{Name: "a", Addr: a.addr, Weight: 1, Check: true, Inter: time.Second, Rise: 1, Fall: 1})
	cfg.Backends[0].LogTargets = rawStdout
	var out syncbuf.Buffer
	clk := fakeClock()
	hooks := new(testHooks)
	l := newLBOpts(t, Options{Clock: clk, Stdout: &out, hooks: hooks}, cfg)
	eventually(t, "a's first check", func() bool { return checksDone(l.serverStats(t, "be", "a")) == 1 })

	const noServer = "backend be has no server available!"
	a.stop()
	hooks.adminCounted = func(*server) {
		clk.Advance(time.Second) // the next check fails: DOWN (fall 1)
		// The old code logged the check's DOWN meanwhile; the fixed one
		// holds the check until the move is counted (not an assertion).
		for deadline := time.Now().Add(500 * time.Millisecond); !strings.Contains(out.String(), noServer) && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if err := l.SetServerAdmin("be", "a", stats.AdminMaint); err != nil {
		t.Fatal(err)
	}
	hooks.adminCounted = nil
	// Into MAINT the check has stopped, its lines sent: the line of the
	// return comes after them.
	if err := l.SetServerAdmin("be", "a", stats.AdminReady); err != nil {
		t.Fatal(err)
	}
	const back = "Server be/a is UP/READY (leaving forced maintenance)."
	eventually(t, "the log up to the server's return", func() bool { return strings.Contains(out.String(), back) })
	// (After it the restarted check fails again: a line of its own.)
	before, _, _ := strings.Cut(out.String(), back)
	if n := strings.Count(before, noServer); n != 1 {
		t.Errorf("%q sent %d times, want once:\n%s", noServer, n, out.String())
	}
	if !strings.Contains(before, "Server be/a is going DOWN for maintenance") {
		t.Errorf("no maintenance line:\n%s", out.String())
	}
}

// TestNoCheckAfterShutdown: a server taken out of MAINT by the runtime
// API after Shutdown (the API's sockets close after the LB: `vipstack
// lb` closes them when its run ends) does not start its check again.
// Before, the check Shutdown had stopped for good started again, and ran
// on, probing and logging, in a load balancer that was shut down.
func TestNoCheckAfterShutdown(t *testing.T) {
	eventually(t, "no checker running before the test", func() bool { return runningCheckers() == 0 })
	a := startBackend(t, "a")
	l := newLBOpts(t, Options{Clock: fakeClock()}, tcpConfig(lbconfig.RoundRobin,
		lbconfig.Server{Name: "a", Addr: a.addr, Weight: 1, Check: true, Inter: time.Second, Rise: 1, Fall: 1}))
	if err := l.SetServerAdmin("be", "a", stats.AdminMaint); err != nil {
		t.Fatal(err)
	}
	l.Shutdown(canceled())
	if err := l.SetServerAdmin("be", "a", stats.AdminReady); err != nil {
		t.Fatal(err)
	}
	// startCheck's goroutine counts from its go statement, before
	// SetServerAdmin returns.
	if n := runningCheckers(); n != 0 {
		t.Errorf("%d checker(s) running after Shutdown", n)
	}
	eventually(t, "no checker running", func() bool { return runningCheckers() == 0 })
}

// TestLeavingMaintLoggedBeforeCheck: a server taken out of MAINT whose
// restarted check fails logs "is UP/READY (leaving forced maintenance)."
// before the check's DOWN line, as haproxy 2.6.12 does
// (TestSyslogMatchesHaproxy). The check used to start before the move's
// lines were sent, so a quick first result could come first (seen once
// in TestSyslogMatchesHaproxy beside other tests); here a hook holds the
// caller after the restart until the check's line is out.
func TestLeavingMaintLoggedBeforeCheck(t *testing.T) {
	a := startBackend(t, "a")
	cfg := tcpConfig(lbconfig.RoundRobin, lbconfig.Server{Name: "a", Addr: a.addr, Weight: 1, Check: true, Inter: time.Second, Rise: 1, Fall: 1})
	cfg.Backends[0].LogTargets = rawStdout
	var out syncbuf.Buffer
	hooks := new(testHooks)
	l := newLBOpts(t, Options{Clock: fakeClock(), Stdout: &out, hooks: hooks}, cfg)
	eventually(t, "a's first check", func() bool { return checksDone(l.serverStats(t, "be", "a")) == 1 })
	if err := l.SetServerAdmin("be", "a", stats.AdminMaint); err != nil {
		t.Fatal(err)
	}
	a.stop()
	const down = "Server be/a is DOWN"
	hooks.checkRestarted = func(*server) {
		// Not an assertion: gives the restarted check time to log.
		for deadline := time.Now().Add(2 * time.Second); !strings.Contains(out.String(), down) && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if err := l.SetServerAdmin("be", "a", stats.AdminReady); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the restarted check's DOWN line", func() bool { return strings.Contains(out.String(), down) })
	const back = "Server be/a is UP/READY (leaving forced maintenance)."
	logged := out.String()
	if b, d := strings.Index(logged, back), strings.Index(logged, down); b < 0 || b > d {
		t.Errorf("want %q before the check's %q:\n%s", back, down, logged)
	}
}

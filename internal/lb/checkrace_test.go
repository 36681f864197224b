package lb

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
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
		err := l.SetServerAdmin("be", "a", AdminMaint)
		if err == nil {
			err = l.SetServerAdmin("be", "a", AdminReady)
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

package supervise

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// earlyHUP is the catch CatchHUPEarly sets up: a SIGHUP that arrives
// before this process handles SIGHUP itself waits in c.
var earlyHUP struct {
	mu sync.Mutex
	c  chan os.Signal
}

// CatchHUPEarly keeps a SIGHUP that arrives while this process starts
// from ending it: Go's default for SIGHUP ends a process, and a daemon
// that is sent SIGHUP (a reload) in its first milliseconds, before its
// command asked for the signal, would die of it (bench/chaos: a cluster
// reload 27 ms after an agent's restart). The SIGHUP is kept until the
// command handles the signal (HUPReady, which says whether one came) or
// a supervisor runs (Supervisor.Run, which drops it: the child it starts
// reads its configuration afresh). The catch is a signal handler, not
// SIG_IGN, so the processes this one starts keep the default.
func CatchHUPEarly() {
	earlyHUP.mu.Lock()
	defer earlyHUP.mu.Unlock()
	if earlyHUP.c != nil {
		return
	}
	earlyHUP.c = make(chan os.Signal, 1)
	signal.Notify(earlyHUP.c, syscall.SIGHUP)
}

// endEarlyHUP ends CatchHUPEarly's catch, once the caller has its own
// signal.Notify for SIGHUP in place, and reports whether a SIGHUP came
// during it.
func endEarlyHUP() bool {
	earlyHUP.mu.Lock()
	defer earlyHUP.mu.Unlock()
	if earlyHUP.c == nil {
		return false
	}
	signal.Stop(earlyHUP.c)
	select {
	case <-earlyHUP.c:
		return true
	default:
		return false
	}
}

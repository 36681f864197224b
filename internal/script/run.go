package script

import (
	"os/exec"
	"time"
)

// DefaultKillGrace is how long a timed-out script has between SIGTERM and
// SIGKILL, keepalived's 2 seconds.
const DefaultKillGrace = 2 * time.Second

// OutputLimit is how much of a script's combined stdout and stderr Run keeps
// for logs; the rest is read and discarded so the script never blocks on a
// full pipe.
const OutputLimit = 4096

// Runner runs scripts as keepalived does: argv exec'd directly as the
// Security's user, in its own process group, stdin from /dev/null, a
// minimal environment, killed (with its whole process group) on timeout.
type Runner struct {
	Security Security
	// KillGrace is the time between SIGTERM and SIGKILL when a script times
	// out or its context is cancelled; 0 means DefaultKillGrace.
	KillGrace time.Duration
	// Start starts a script's process; nil is exec.Cmd.Start. The VRRP
	// engine passes its sched.Process's, so that scripts do not inherit
	// its realtime priority.
	Start func(*exec.Cmd) error
}

// Result is the outcome of one Run.
type Result struct {
	// ExitCode is the exit status, or -1 if the script was killed by a
	// signal or never started.
	ExitCode int
	// Signal names the signal that killed the script ("terminated",
	// "killed"), "" if it exited.
	Signal string
	// TimedOut is set when Run's timeout expired and the script was killed.
	TimedOut bool
	// Output is the first OutputLimit bytes of stdout and stderr combined.
	Output string
	// Err is set when the script could not be run (refused by Security, not
	// found, exec failed) or when the caller's context ended first.
	Err error
}

// OK reports whether the script ran and exited 0.
func (r Result) OK() bool { return r.Err == nil && !r.TimedOut && r.Signal == "" && r.ExitCode == 0 }

func (r Runner) start(cmd *exec.Cmd) error {
	if r.Start != nil {
		return r.Start(cmd)
	}
	return cmd.Start()
}

func (r Runner) killGrace() time.Duration {
	if r.KillGrace > 0 {
		return r.KillGrace
	}
	return DefaultKillGrace
}

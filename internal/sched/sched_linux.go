//go:build linux

package sched

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Apply changes the process from what it had (was) to t, and returns what
// it did, for the log. Realtime priority is set on every thread the
// process has now; threads the Go runtime starts later are set by the
// next call to Threads. Children (scripts) do not inherit it: the policy
// carries SCHED_FLAG_RESET_ON_FORK. It needs CAP_SYS_NICE, CAP_IPC_LOCK
// and CAP_SYS_RESOURCE (to raise limits again); a failure is returned
// after the other settings are applied.
func Apply(was, t Tuning) (done []string, err error) {
	var errs []error
	if t.RLimitRTTime != was.RLimitRTTime {
		lim := unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
		if t.RLimitRTTime > 0 {
			lim = unix.Rlimit{Cur: uint64(t.RLimitRTTime), Max: uint64(t.RLimitRTTime)}
		}
		if e := unix.Setrlimit(unix.RLIMIT_RTTIME, &lim); e != nil {
			errs = append(errs, fmt.Errorf("RLIMIT_RTTIME %d us: %w", t.RLimitRTTime, e))
		} else {
			done = append(done, fmt.Sprintf("RLIMIT_RTTIME %s", usOrNone(t.RLimitRTTime)))
		}
	}
	if t.NoSwap != was.NoSwap {
		var e error
		if t.NoSwap {
			e = unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE | unix.MCL_ONFAULT)
		} else {
			e = unix.Munlockall()
		}
		if e != nil {
			errs = append(errs, fmt.Errorf("memory lock %v: %w", t.NoSwap, e))
		} else {
			done = append(done, fmt.Sprintf("memory locked: %v", t.NoSwap))
		}
	}
	if t.RTPriority != was.RTPriority {
		n, e := Threads(t.RTPriority)
		if e != nil {
			errs = append(errs, e)
		} else if t.RTPriority > 0 {
			done = append(done, fmt.Sprintf("SCHED_RR priority %d on %d threads", t.RTPriority, n))
		} else {
			done = append(done, fmt.Sprintf("SCHED_OTHER on %d threads", n))
		}
	}
	return done, errors.Join(errs...)
}

// Threads sets every thread of the process to SCHED_RR at prio (0:
// SCHED_OTHER), and returns how many it set.
func Threads(prio int) (int, error) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, err
	}
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}
	if prio > 0 {
		attr = unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_RR, Priority: uint32(prio), Flags: unix.SCHED_FLAG_RESET_ON_FORK}
	}
	n := 0
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetAttr(tid, &attr, 0); err != nil {
			if err == unix.ESRCH {
				continue // the thread ended meanwhile
			}
			return n, fmt.Errorf("SCHED_RR priority %d on thread %d: %w", prio, tid, err)
		}
		n++
	}
	return n, nil
}

func usOrNone(us int) string {
	if us == 0 {
		return "none"
	}
	return strconv.Itoa(us) + " us"
}

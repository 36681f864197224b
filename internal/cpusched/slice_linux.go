package cpusched

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// MinSlice and MaxSlice bound the slice the kernel accepts (it clamps
// sched_runtime to 0.1 to 100 ms).
const (
	MinSlice = 100 * time.Microsecond
	MaxSlice = 100 * time.Millisecond
)

// ErrUnsupported means the kernel took the request but does not keep a
// slice per thread (a kernel before 6.12, or another scheduler).
var ErrUnsupported = errors.New("the kernel keeps no slice per thread (EEVDF custom slices need Linux 6.12 or later)")

// SetSlice requests slice for every thread of this process that runs
// under SCHED_OTHER or SCHED_BATCH, keeping each thread's policy and nice
// value; threads started later inherit it from the thread that starts
// them. It returns how many threads it set, and ErrUnsupported when the
// kernel reports back another slice. A thread that exits meanwhile is
// skipped.
func SetSlice(slice time.Duration) (int, error) {
	if slice < MinSlice || slice > MaxSlice {
		return 0, fmt.Errorf("cpusched: slice %v: want %v to %v", slice, MinSlice, MaxSlice)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, fmt.Errorf("cpusched: list threads: %w", err)
	}
	n := 0
	unsupported := false
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		ok, err := setThread(tid, uint64(slice.Nanoseconds()))
		if errors.Is(err, unix.ESRCH) {
			continue // exited
		}
		if err != nil {
			return n, err
		}
		if !ok {
			unsupported = true
		}
		n++
	}
	if unsupported {
		return n, ErrUnsupported
	}
	return n, nil
}

// setThread sets tid's slice and reports whether the kernel kept it. A
// thread under another policy (real-time, deadline, idle) is left alone
// and counts as kept.
func setThread(tid int, ns uint64) (bool, error) {
	attr, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return false, fmt.Errorf("cpusched: sched_getattr of thread %d: %w", tid, err)
	}
	if attr.Policy != unix.SCHED_NORMAL && attr.Policy != unix.SCHED_BATCH {
		return true, nil
	}
	attr.Size = unix.SizeofSchedAttr
	attr.Flags = 0
	attr.Runtime = ns
	if err := unix.SchedSetAttr(tid, attr, 0); err != nil {
		return false, fmt.Errorf("cpusched: sched_setattr of thread %d (slice %d ns): %w", tid, ns, err)
	}
	got, err := Slice(tid)
	if err != nil {
		return false, err
	}
	return got == time.Duration(ns), nil
}

// Slice returns the slice the kernel reports for thread tid (0 from a
// kernel that reports none).
func Slice(tid int) (time.Duration, error) {
	attr, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return 0, fmt.Errorf("cpusched: sched_getattr of thread %d: %w", tid, err)
	}
	return time.Duration(attr.Runtime), nil
}

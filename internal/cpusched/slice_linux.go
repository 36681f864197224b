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
// them. A thread started from a not yet set thread while SetSlice runs
// would not, so it goes over the threads again until a pass finds none
// to set (at most passes times). It returns how many threads it set, and
// ErrUnsupported when the kernel reports back another slice. A thread
// that exits meanwhile is skipped.
func SetSlice(slice time.Duration) (int, error) {
	if slice < MinSlice || slice > MaxSlice {
		return 0, fmt.Errorf("cpusched: slice %v: want %v to %v", slice, MinSlice, MaxSlice)
	}
	const passes = 3
	n := 0
	for range passes {
		set, err := setAll(slice)
		n += set
		if err != nil || set == 0 {
			return n, err
		}
	}
	return n, nil
}

// setAll sets slice on every thread that does not have it yet and
// returns how many it set.
func setAll(slice time.Duration) (int, error) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, fmt.Errorf("cpusched: list threads: %w", err)
	}
	n := 0
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		set, err := setThread(tid, slice)
		if errors.Is(err, unix.ESRCH) {
			continue // exited
		}
		if err != nil {
			return n, err
		}
		if set {
			n++
		}
	}
	return n, nil
}

// setThread sets tid's slice unless it has it already or runs under
// another policy (real-time, deadline, idle: left alone), and reports
// whether it set it. It returns ErrUnsupported when the kernel reports
// back another slice.
func setThread(tid int, slice time.Duration) (bool, error) {
	attr, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return false, fmt.Errorf("cpusched: sched_getattr of thread %d: %w", tid, err)
	}
	if attr.Policy != unix.SCHED_NORMAL && attr.Policy != unix.SCHED_BATCH {
		return false, nil
	}
	ns := uint64(slice.Nanoseconds())
	if attr.Runtime == ns {
		return false, nil
	}
	attr.Size = unix.SizeofSchedAttr
	attr.Flags = 0
	attr.Runtime = ns
	if err := unix.SchedSetAttr(tid, attr, 0); err != nil {
		return false, fmt.Errorf("cpusched: sched_setattr of thread %d (slice %v): %w", tid, slice, err)
	}
	got, err := Slice(tid)
	if err != nil {
		return false, err
	}
	if got != slice {
		return false, ErrUnsupported
	}
	return true, nil
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

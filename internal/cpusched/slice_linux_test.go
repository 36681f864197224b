package cpusched

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestSetSliceRange(t *testing.T) {
	for _, d := range []time.Duration{0, 50 * time.Microsecond, 101 * time.Millisecond} {
		_, err := SetSlice(d)
		if err == nil || !strings.Contains(err.Error(), "want 100µs to 100ms") {
			t.Errorf("SetSlice(%v) = %v, want an error naming 100µs to 100ms", d, err)
		}
	}
}

// TestSetSlice sets a slice for the test process and checks it on every
// thread, on threads started afterwards (they inherit it), and that the
// policy and nice value stay.
func TestSetSlice(t *testing.T) {
	before, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	slice := 300 * time.Microsecond
	if time.Duration(before.Runtime) == slice { // -count: set by the last run
		slice = 400 * time.Microsecond
	}
	n, err := SetSlice(slice)
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("%v (kernel %s)", err, kernel())
	}
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 || n > len(tasks) {
		t.Errorf("SetSlice set %d threads; the process has %d", n, len(tasks))
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		if got, err := Slice(tid); err == nil && got != slice {
			t.Errorf("thread %d: slice %v after SetSlice, want %v", tid, got, slice)
		}
	}
	after, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if after.Policy != before.Policy || after.Nice != before.Nice {
		t.Errorf("policy/nice %d/%d after SetSlice, want %d/%d", after.Policy, after.Nice, before.Policy, before.Nice)
	}

	// More threads than the process has: the runtime must start new ones.
	want := len(tasks) + 2
	type got struct {
		tid   int
		slice time.Duration
		err   error
	}
	results := make(chan got, want)
	release := make(chan struct{})
	for range want {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tid := unix.Gettid()
			s, err := Slice(tid)
			results <- got{tid, s, err}
			<-release
		}()
	}
	defer close(release)
	for range want {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.slice != slice {
			t.Errorf("thread %d: slice %v, want %v (inherited)", r.tid, r.slice, slice)
		}
	}
}

func kernel() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "?"
	}
	return unix.ByteSliceToString(u.Release[:])
}

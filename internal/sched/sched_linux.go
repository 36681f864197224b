//go:build linux

package sched

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// passes bounds how often Apply goes over the threads: a thread started
// from a thread not yet set while a pass runs inherits the old policy, so
// Apply goes over them again until a pass finds none to set.
const passes = 5

// Process is the scheduling of this process. Its zero value is ready: the
// kernel's default, and Start is exec.Cmd.Start. Use one per process.
type Process struct {
	mu   sync.Mutex
	cur  Tuning
	sp   *spawner // nil until a tuning other than the default is applied
	nice int32    // the nice value the process had before the first Apply
}

// spawner is a thread locked to one goroutine for good, from which child
// processes are started: its policy carries SCHED_FLAG_RESET_ON_FORK, so
// that a child starts at SCHED_OTHER, at nice 0 when the process runs at
// SCHED_RR (the kernel resets it so, as keepalived resets its scripts),
// else at the nice value the process started with (a negative one reset to
// 0), whatever the rest of the process runs at. It never ends: a child
// started with Pdeathsig gets the signal when the thread that started it
// exits.
type spawner struct {
	tid  int
	work chan func()
}

func newSpawner() *spawner {
	s := &spawner{work: make(chan func())}
	tid := make(chan int)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread is the spawner's
		tid <- unix.Gettid()
		for f := range s.work {
			f()
		}
	}()
	s.tid = <-tid
	return s
}

// Start starts cmd as cmd.Start does; once a tuning is applied, from the
// spawner's thread, so that cmd does not inherit the process's realtime
// priority or negative nice.
func (p *Process) Start(cmd *exec.Cmd) error {
	if p == nil {
		return cmd.Start()
	}
	p.mu.Lock()
	s := p.sp
	p.mu.Unlock()
	if s == nil {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	s.work <- func() { errc <- cmd.Start() }
	return <-errc
}

// Apply changes the process to t and returns what it did, for the log. The
// realtime priority or nice value is set on every thread the process has
// now; threads started later inherit it. It needs CAP_SYS_NICE,
// CAP_IPC_LOCK and CAP_SYS_RESOURCE (to raise limits again); a failure is
// returned after the other settings are applied, with its cause when it is
// a known one (a cgroup without realtime runtime).
func (p *Process) Apply(t Tuning) (done []string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	was := p.cur
	if t.RTPriority > 0 {
		t.Nice = 0 // keepalived: vrrp_priority has no effect under SCHED_RR
	}
	if t == was {
		return nil, nil
	}
	if p.sp == nil {
		a, err := unix.SchedGetAttr(0, 0)
		if err != nil {
			return nil, fmt.Errorf("sched_getattr: %w", err)
		}
		p.nice = a.Nice
		p.sp = newSpawner()
	}
	var errs []error
	// The limit comes first, so that no thread runs at realtime priority
	// without it.
	if t.RLimitRTTime != was.RLimitRTTime {
		if e := setRLimitRTTime(t.RLimitRTTime); e != nil {
			errs = append(errs, e)
		} else if t.RLimitRTTime > 0 {
			done = append(done, fmt.Sprintf("RLIMIT_RTTIME %d us (soft %d us)", t.RLimitRTTime, softRTTime(t.RLimitRTTime)))
		} else {
			done = append(done, "RLIMIT_RTTIME none")
		}
	}
	if t.NoSwap != was.NoSwap {
		if e := lockMemory(t.NoSwap); e != nil {
			errs = append(errs, e)
		} else {
			done = append(done, fmt.Sprintf("memory locked: %v", t.NoSwap))
		}
	}
	if t.RTPriority != was.RTPriority || t.Nice != was.Nice {
		n, e := p.threads(t)
		switch {
		case e != nil:
			errs = append(errs, e)
		case t.RTPriority > 0:
			done = append(done, fmt.Sprintf("SCHED_RR priority %d on %d threads", t.RTPriority, n))
		default:
			done = append(done, fmt.Sprintf("SCHED_OTHER nice %d on %d threads", t.Nice, n))
		}
	}
	p.cur = t
	if len(errs) > 0 {
		// What failed stays as it was; the next Apply tries it again.
		p.cur = was
	}
	return done, errors.Join(errs...)
}

func setRLimitRTTime(us int) error {
	lim := unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
	if us > 0 {
		lim = unix.Rlimit{Cur: uint64(softRTTime(us)), Max: uint64(us)}
	}
	if err := unix.Setrlimit(unix.RLIMIT_RTTIME, &lim); err != nil {
		return fmt.Errorf("RLIMIT_RTTIME %d us: %w", us, err)
	}
	return nil
}

func lockMemory(on bool) error {
	var err error
	if on {
		err = unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE | unix.MCL_ONFAULT)
	} else {
		err = unix.Munlockall()
	}
	if err != nil {
		return fmt.Errorf("memory lock %v: %w", on, err)
	}
	return nil
}

// attrs are the scheduling attributes of t for the process's threads and
// for the spawner's, for a process that started at nice value nice.
func attrs(t Tuning, nice int32) (thread, spawner unix.SchedAttr) {
	thread = unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL, Nice: int32(t.Nice)}
	if t.RTPriority > 0 {
		thread = unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_RR, Priority: uint32(t.RTPriority)}
	}
	spawner = thread
	spawner.Flags = unix.SCHED_FLAG_RESET_ON_FORK
	if t.RTPriority == 0 {
		spawner.Nice = nice
	}
	return thread, spawner
}

// threads sets every thread to t (the spawner's with its flag), pass after
// pass until a pass finds none to set, and returns how many it set.
func (p *Process) threads(t Tuning) (int, error) {
	thread, spawn := attrs(t, p.nice)
	n := 0
	for range passes {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return n, fmt.Errorf("list threads: %w", err)
		}
		set := 0
		for _, task := range tasks {
			tid, err := strconv.Atoi(task.Name())
			if err != nil {
				continue
			}
			want := thread
			if tid == p.sp.tid {
				want = spawn
			}
			changed, err := setThread(tid, want)
			if errors.Is(err, unix.ESRCH) {
				continue // the thread ended meanwhile
			}
			if err != nil {
				return n, explain(err, t, tid)
			}
			if changed {
				set++
			}
		}
		n += set
		if set == 0 {
			break
		}
	}
	return n, nil
}

// setThread gives tid want unless it has it already, and reports whether it
// changed it.
func setThread(tid int, want unix.SchedAttr) (bool, error) {
	got, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return false, err
	}
	if got.Policy == want.Policy && got.Priority == want.Priority && got.Flags&unix.SCHED_FLAG_RESET_ON_FORK == want.Flags &&
		(want.Policy != unix.SCHED_NORMAL || got.Nice == want.Nice) {
		return false, nil
	}
	return true, unix.SchedSetAttr(tid, &want, 0)
}

// explain names what the kernel refused and, for EPERM, the likely cause.
func explain(err error, t Tuning, tid int) error {
	what := fmt.Sprintf("SCHED_OTHER nice %d", t.Nice)
	if t.RTPriority > 0 {
		what = fmt.Sprintf("SCHED_RR priority %d", t.RTPriority)
	}
	err = fmt.Errorf("%s on thread %d: %w", what, tid, err)
	if !errors.Is(err, unix.EPERM) {
		return err
	}
	if t.RTPriority > 0 {
		if dir, rt, ok := cgroupRTRuntime("/proc/self/cgroup", "/sys/fs/cgroup"); ok && rt == 0 {
			return fmt.Errorf("%w: the process's cgroup %s has cpu.rt_runtime_us 0, which forbids realtime scheduling in it; "+
				"give that cgroup realtime runtime (echo 950000 > %s, after its parents), or run vipstack in a cgroup that has some",
				err, dir, filepath.Join(dir, "cpu.rt_runtime_us"))
		}
		return fmt.Errorf("%w: realtime priority needs CAP_SYS_NICE or an RLIMIT_RTPRIO of at least %d", err, t.RTPriority)
	}
	return fmt.Errorf("%w: a negative nice value needs CAP_SYS_NICE or an RLIMIT_NICE of at least %d", err, 20-t.Nice)
}

// cgroupRTRuntime reads, from the cgroup v1 cpu controller mounted under
// root, the cpu.rt_runtime_us of the cgroup the process file (a
// /proc/PID/cgroup) names. ok is false without such a controller or file
// (cgroup v2 has no per-group realtime runtime).
func cgroupRTRuntime(procCgroup, root string) (dir string, us int, ok bool) {
	f, err := os.Open(procCgroup)
	if err != nil {
		return "", 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controller-list:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			if ctl != "cpu" {
				continue
			}
			for _, mount := range []string{parts[1], "cpu", "cpu,cpuacct"} {
				dir = filepath.Join(root, mount, parts[2])
				b, err := os.ReadFile(filepath.Join(dir, "cpu.rt_runtime_us"))
				if err != nil {
					continue
				}
				n, err := strconv.Atoi(strings.TrimSpace(string(b)))
				return dir, n, err == nil
			}
		}
	}
	return "", 0, false
}

// OffRealtime runs f and returns when it returned. When the calling
// thread runs at a realtime policy (Apply's SCHED_RR), f runs on a thread
// of its own set to SCHED_OTHER at nice 0, which ends with it (or, when
// it is the main thread, the runtime parks it for good): work that
// may run for milliseconds without blocking (the start-up's trim, which
// returns every free page and drops the executable's, memtrim.AfterStart)
// would otherwise count against RLIMIT_RTTIME, whose hard limit kills the
// whole process (keepalived's default: 10 ms). A thread the runtime
// starts meanwhile starts from its template thread, not from this one.
func OffRealtime(f func()) {
	if a, err := unix.SchedGetAttr(0, 0); err != nil || (a.Policy != unix.SCHED_RR && a.Policy != unix.SCHED_FIFO) {
		f()
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		normal := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}
		_ = unix.SchedSetAttr(0, &normal, 0) // if refused, f runs as it would have
		f()
	}()
	<-done
}

package supervise

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// reaper reaps the orphans the kernel hands to this process. In a container
// whose first process is vipstack (a static pod, the ipfailover pod), every
// process whose parent exits before it - the background job of a
// vrrp_script, a notify script's daemon - becomes a child of vipstack; a
// child nobody waits for stays a zombie, and zombies pile up, one or more
// per script run, until the pod's process limit makes every fork fail:
// checks fail and VIPs move. keepalived as process 1 reaps them (measured,
// helper ac: 8 zombies after 8 s of a script that leaves `sleep 0.3 &`
// behind under vipstack, 0 under keepalived).
//
// The engine is the supervisor's child too, and os.Process.Wait must get its
// exit status: the reaper looks at an exited child without reaping it
// (waitid WNOWAIT) and reaps it only if it is not the engine. The engine's
// pid is set under the same lock, so an engine that exits at once is never
// taken for an orphan.
type reaper struct {
	mu     sync.Mutex
	engine int // pid of the running engine; 0 while none runs
	reaped int
	log    Logger
}

// start makes the engine's process (it calls startEngine with the lock
// held) and records its pid.
func (r *reaper) start(startEngine func() (int, error)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	pid, err := startEngine()
	if err == nil {
		r.engine = pid
	}
	return err
}

// run reaps orphans on every SIGCHLD, and every second in case a signal
// was merged, until stop is closed.
func (r *reaper) run(stop <-chan struct{}) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	defer signal.Stop(sigs)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		r.reap()
		select {
		case <-stop:
			return
		case <-sigs:
		case <-tick.C:
		}
	}
}

// reap reaps every exited child but the engine.
func (r *reaper) reap() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		pid, ok := exitedChild()
		if !ok || pid == r.engine {
			return // none, or the engine: its Wait reaps it, and the next round sees the rest
		}
		var ws syscall.WaitStatus
		if got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); err != nil || got != pid {
			return
		}
		r.reaped++
		if r.reaped == 1 {
			r.log.Info("supervisor: reaping orphaned processes (vipstack is process 1 here)", "first", pid)
		}
	}
}

// siginfo is room for Linux's siginfo_t (128 bytes), aligned as it is.
type siginfo [16]uint64

// exitedChild returns the pid of a child that has exited, leaving it
// unreaped: waitid(P_ALL, 0, &info, WEXITED|WNOHANG|WNOWAIT), which the
// syscall package does not wrap.
func exitedChild() (int, bool) {
	const pAll = 0
	var info siginfo
	_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pAll, 0, uintptr(unsafe.Pointer(&info)),
		syscall.WEXITED|syscall.WNOHANG|syscall.WNOWAIT, 0, 0)
	if e != 0 {
		return 0, false // ECHILD: no children at all
	}
	pid := siginfoPid(&info)
	return pid, pid > 0 // 0: children, none exited
}

// siginfoPid reads si_pid, the first field of siginfo_t's union, which
// starts after three ints, aligned to a pointer.
func siginfoPid(info *siginfo) int {
	const align = unsafe.Alignof(uintptr(0))
	off := (3*unsafe.Sizeof(int32(0)) + align - 1) &^ (align - 1)
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(info), off)))
}

// NoSupervisorWarning is what a command run with --no-supervisor logs when
// it is process pid: as process 1 nothing would reap the orphans of its
// scripts (see reaper). "" when pid is not 1.
func NoSupervisorWarning(pid int) string {
	if pid != 1 {
		return ""
	}
	return "running as process 1 without the supervisor: orphaned processes of scripts are not reaped and pile up as zombies; run without --no-supervisor"
}

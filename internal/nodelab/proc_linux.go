package nodelab

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is one process the lab started, its output in a log file.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when it has exited
}

// startProc starts argv with its output in logPath. The process gets
// SIGKILL if the test process dies (the thread that forks it is held until
// it exits, as the parent-death signal follows that thread).
func startProc(name, logPath string, argv ...string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	defer f.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &proc{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	started := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL to the process and waits (up to 10 s) until it exits.
func (p *proc) kill() error {
	if p == nil || p.exited() {
		return nil
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit 10s after SIGKILL", p.name, p.cmd.Process.Pid)
	}
}

// stop sends SIGTERM, then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) error {
	if p == nil || p.exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	return p.kill()
}

// tail returns the last n lines of the process's log.
func (p *proc) tail(n int) string { return tailFile(p.logPath, n) }

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// nodePids lists the processes that belong to a node: those in its network
// namespace (its containerd, kubelet, shims and hostNetwork containers) and
// those in cgroups under its cgroupRoot (its other containers). The test
// process itself is never listed.
func nodePids(netnsPath, cgroupRoot string) ([]int, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(netnsPath, &st); err != nil {
		return nil, fmt.Errorf("stat %s: %w", netnsPath, err)
	}
	nsLink := "net:[" + strconv.FormatUint(st.Ino, 10) + "]"
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		if l, err := os.Readlink(dir + "/ns/net"); err == nil && l == nsLink {
			pids = append(pids, pid)
			continue
		}
		if b, err := os.ReadFile(dir + "/cgroup"); err == nil && inCgroup(b, cgroupRoot) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// inCgroup reports whether a /proc/PID/cgroup file puts the process under
// root in any hierarchy.
func inCgroup(procCgroup []byte, root string) bool {
	for _, line := range bytes.Split(procCgroup, []byte("\n")) {
		f := bytes.SplitN(line, []byte(":"), 3)
		if len(f) == 3 {
			p := string(f[2])
			if p == root || strings.HasPrefix(p, root+"/") {
				return true
			}
		}
	}
	return false
}

// killNodePids kills every process of a node by PID, again until none is
// left (a dying shim may leave a container that was being started), at
// most for 15 s.
func killNodePids(netnsPath, cgroupRoot string) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		pids, err := nodePids(netnsPath, cgroupRoot)
		if err != nil {
			return err
		}
		var alive []int
		for _, pid := range pids {
			if syscall.Kill(pid, syscall.SIGKILL) == nil && !isZombie(pid) {
				alive = append(alive, pid)
			}
		}
		if len(alive) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v still alive 15s after SIGKILL", alive)
		}
		time.Sleep(50 * time.Millisecond) // waiting for the kernel to reap, not for a timer of ours
	}
}

func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}

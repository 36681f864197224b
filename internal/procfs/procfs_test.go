package procfs

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestSelfAndChild(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	self := os.Getpid()
	if !Alive(self) {
		t.Fatal("Alive(self) = false")
	}
	if got := PPid(self); got != os.Getppid() {
		t.Fatalf("PPid(self) = %d, want %d", got, os.Getppid())
	}
	if ChildOf(self) != 0 {
		t.Fatal("ChildOf(self) found a child before any was started")
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	child := cmd.Process.Pid
	if got := ChildOf(self); got != child {
		t.Errorf("ChildOf(self) = %d, want %d", got, child)
	}
	if got := PPid(child); got != self {
		t.Errorf("PPid(child) = %d, want %d", got, self)
	}
	cmd.Process.Kill()
	// Dead but not yet reaped: a zombie, which is not alive.
	for deadline := time.Now().Add(10 * time.Second); Alive(child); {
		if time.Now().After(deadline) {
			t.Fatal("the killed child is still alive")
		}
		time.Sleep(5 * time.Millisecond) // polling /proc, not a timing assertion
	}
	cmd.Wait()
	if Alive(child) || ChildOf(self) != 0 {
		t.Error("a reaped child still shows")
	}
	if Alive(1 << 30) {
		t.Error("Alive of a pid that cannot exist")
	}
}

func TestLoadAvg(t *testing.T) {
	if _, err := os.Stat("/proc/loadavg"); err != nil {
		t.Skip("no /proc/loadavg")
	}
	f := strings.Fields(LoadAvg())
	if len(f) != 3 {
		t.Fatalf("LoadAvg() = %q, want three fields", LoadAvg())
	}
	for _, v := range f {
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			t.Errorf("LoadAvg() field %q is not a number", v)
		}
	}
}

// TestGroup: a process started in a process group of its own is the
// group's one member; its memory is counted, and nothing of a group that
// does not exist.
func TestGroup(t *testing.T) {
	if _, err := os.Stat("/proc/self/smaps_rollup"); err != nil {
		t.Skip("no /proc smaps_rollup")
	}
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	if got := Group(pid); len(got) != 1 || got[0] != pid {
		t.Fatalf("Group(%d) = %v, want [%d]", pid, got, pid)
	}
	if rss, pss := MemMiB([]int{pid}); rss <= 0 || pss <= 0 || pss > rss {
		t.Errorf("MemMiB = %.2f, %.2f MiB; want 0 < PSS <= RSS", rss, pss)
	}
	if CPUTicks([]int{1 << 30}) != 0 {
		t.Error("CPUTicks of no process is not 0")
	}
	if got := Group(1 << 30); len(got) != 0 {
		t.Errorf("Group of no group = %v", got)
	}
	if rss, pss := MemMiB([]int{1 << 30}); rss != 0 || pss != 0 {
		t.Errorf("MemMiB of no process = %.2f, %.2f", rss, pss)
	}
}

// TestStatusKiB: this process's resident size is a positive number of
// KiB; a field /proc/PID/status does not have is an error naming it.
func TestStatusKiB(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/PID/status is Linux's")
	}
	n, err := StatusKiB(os.Getpid(), "VmRSS")
	if err != nil || n <= 0 {
		t.Errorf("StatusKiB(self, VmRSS) = %d, %v; want a positive size", n, err)
	}
	if _, err := StatusKiB(os.Getpid(), "NoSuchField"); err == nil || !strings.Contains(err.Error(), "NoSuchField") {
		t.Errorf("StatusKiB(self, NoSuchField): error %v, want one naming the field", err)
	}
}

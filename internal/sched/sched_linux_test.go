package sched

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/testnet"
)

func TestAttrs(t *testing.T) {
	tests := []struct {
		name           string
		t              Tuning
		nice           int32 // the process's at start
		thread, spawnr unix.SchedAttr
	}{
		{
			name:   "realtime: the spawner's children start at SCHED_OTHER",
			t:      Tuning{RTPriority: 50, RLimitRTTime: 10000},
			nice:   10,
			thread: unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_RR, Priority: 50},
			spawnr: unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_RR, Priority: 50, Flags: unix.SCHED_FLAG_RESET_ON_FORK},
		},
		{
			name:   "negative nice: the spawner and its children at the process's first",
			t:      Tuning{Nice: -5},
			thread: unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL, Nice: -5},
			spawnr: unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL, Flags: unix.SCHED_FLAG_RESET_ON_FORK},
		},
		{
			name:   "positive nice: the same",
			t:      Tuning{Nice: 10},
			nice:   5,
			thread: unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL, Nice: 10},
			spawnr: unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL, Nice: 5, Flags: unix.SCHED_FLAG_RESET_ON_FORK},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th, sp := attrs(tt.t, tt.nice)
			if diff := cmp.Diff([]unix.SchedAttr{tt.thread, tt.spawnr}, []unix.SchedAttr{th, sp}); diff != "" {
				t.Errorf("attrs(%+v, %d) (-want +got):\n%s", tt.t, tt.nice, diff)
			}
		})
	}
}

func TestCgroupRTRuntime(t *testing.T) {
	tests := []struct {
		name    string
		cgroup  string
		files   map[string]string // under the cgroup root
		wantDir string            // under the root; "" for not found
		wantUS  int
	}{
		{
			name:    "v1 cpu controller of its own",
			cgroup:  "4:memory:/x\n1:cpu:/k8s.io/pod1\n0::/\n",
			files:   map[string]string{"cpu/k8s.io/pod1/cpu.rt_runtime_us": "0\n"},
			wantDir: "cpu/k8s.io/pod1",
		},
		{
			name:    "v1 cpu,cpuacct mounted together",
			cgroup:  "3:cpu,cpuacct:/system.slice/vipstack.service\n",
			files:   map[string]string{"cpu,cpuacct/system.slice/vipstack.service/cpu.rt_runtime_us": "950000\n"},
			wantDir: "cpu,cpuacct/system.slice/vipstack.service", wantUS: 950000,
		},
		{
			name:    "v1 cpu,cpuacct reached through the cpu link",
			cgroup:  "3:cpu,cpuacct:/a\n",
			files:   map[string]string{"cpu/a/cpu.rt_runtime_us": "1000\n"},
			wantDir: "cpu/a", wantUS: 1000,
		},
		{
			name:   "cgroup v2 only: no per-group realtime runtime",
			cgroup: "0::/user.slice\n",
			files:  map[string]string{"user.slice/cpu.max": "max 100000\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			root := filepath.Join(dir, "cgroup")
			for name, body := range tt.files {
				p := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			proc := filepath.Join(dir, "proc-cgroup")
			if err := os.WriteFile(proc, []byte(tt.cgroup), 0o644); err != nil {
				t.Fatal(err)
			}
			gotDir, us, ok := cgroupRTRuntime(proc, root)
			if tt.wantDir == "" {
				if ok {
					t.Errorf("found %s (%d us), want nothing", gotDir, us)
				}
				return
			}
			if !ok || gotDir != filepath.Join(root, tt.wantDir) || us != tt.wantUS {
				t.Errorf("got %s %d us ok=%v, want %s %d us", gotDir, us, ok, filepath.Join(root, tt.wantDir), tt.wantUS)
			}
		})
	}
}

// childEnv marks the test binary run as a child by the tests below: the
// tuning is applied to a process of its own, never to the test process.
const childEnv = "VIPSTACK_SCHED_TEST_CHILD"

// TestMain runs the child's part when childEnv says so.
func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(child(mode))
	}
	os.Exit(m.Run())
}

// child applies the tuning the mode names, makes the Go runtime start new
// threads, starts a shell through Process.Start, and prints what it saw:
// "spawner TID" (the thread that starts scripts, at the process's first
// nice value), "thread TID POLICY PRIO NICE" per thread, "script POLICY
// NICE", and "error ..." for a failed Apply.
func child(mode string) int {
	if cg := os.Getenv(childEnv + "_CGROUP"); cg != "" {
		if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			fmt.Printf("error joining %s: %v\n", cg, err)
			return 1
		}
	}
	var p Process
	t := Tuning{RTPriority: 10}
	if mode == "nice" {
		t = Tuning{Nice: -5}
	}
	if _, err := p.Apply(t); err != nil {
		fmt.Printf("error %v\n", err)
		return 0
	}
	if mode == "offrt" {
		return offRealtimeChild()
	}
	// New threads: goroutines locked to their threads and blocked in a
	// system call each need a thread of their own, which the runtime
	// starts now, after Apply.
	before := len(tasks())
	var wg sync.WaitGroup
	release := make(chan struct{})
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			<-release
		}()
	}
	for deadline := time.Now().Add(5 * time.Second); len(tasks()) < before+4 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // waiting for the runtime's threads, bounded
	}
	fmt.Printf("threads before %d after %d\nspawner %d\n", before, len(tasks()), p.sp.tid)
	for _, tid := range tasks() {
		a, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			continue
		}
		fmt.Printf("thread %d %d %d %d\n", tid, a.Policy, a.Priority, a.Nice)
	}
	cmd := exec.Command("/bin/sh", "-c", `awk '{print "script", $41, $19}' /proc/$$/stat`)
	var out strings.Builder
	cmd.Stdout = &out
	if err := p.Start(cmd); err != nil {
		fmt.Printf("error start: %v\n", err)
		return 1
	}
	_ = cmd.Wait()
	fmt.Print(out.String())
	close(release)
	wg.Wait()
	return 0
}

// offRealtimeChild runs OffRealtime in a process at SCHED_RR and prints
// "off POLICY" (of the thread f ran on), "gone BOOL" (whether that thread
// ended once f returned, or is the main thread, parked for good) and
// "caller POLICY".
func offRealtimeChild() int {
	var tid int
	var policy uint32 = 99
	OffRealtime(func() {
		tid = unix.Gettid()
		if a, err := unix.SchedGetAttr(0, 0); err == nil {
			policy = a.Policy
		}
	})
	// The runtime ends a thread whose goroutine exits locked to it, but
	// for the main thread, which it parks for good: no goroutine runs
	// there again.
	gone := tid == os.Getpid()
	for deadline := time.Now().Add(5 * time.Second); !gone && time.Now().Before(deadline); {
		gone = !slices.Contains(tasks(), tid)
		if !gone {
			time.Sleep(10 * time.Millisecond) // the runtime ends the thread after the goroutine, bounded
		}
	}
	a, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		fmt.Printf("error %v\n", err)
		return 1
	}
	fmt.Printf("off %d\ngone %v\nmain thread %v\ncaller %d\n", policy, gone, tid == os.Getpid(), a.Policy)
	return 0
}

func tasks() []int {
	ents, _ := os.ReadDir("/proc/self/task")
	var out []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// runChild runs the test binary as a child in mode and returns its output.
func runChild(t *testing.T, mode string, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childEnv+"="+mode), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child %s: %v\n%s", mode, err, out)
	}
	return string(out)
}

// TestApplyInherited applies the tuning in a child process, then has the
// runtime start threads: every thread, those started after Apply included,
// must have it (the kernel copies the starting thread's policy), and a
// script started through Process.Start must not: SCHED_OTHER, at nice 0
// under SCHED_RR (as keepalived's scripts run), else at the nice value the
// process started with (the test's own, which `nice go test` raises).
func TestApplyInherited(t *testing.T) {
	testnet.RequireRoot(t)
	own, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	nice := strconv.Itoa(int(own.Nice))
	for _, tt := range []struct {
		mode                       string
		policy, prio, nice, script string
	}{
		// sched_getattr reports nice 0 under SCHED_RR; a child of a
		// SCHED_RR thread with the reset flag starts at nice 0.
		{mode: "rt", policy: "2", prio: "10", nice: "0", script: "script 0 0"},
		{mode: "nice", policy: "0", prio: "0", nice: "-5", script: "script 0 " + nice},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			out := runChild(t, tt.mode)
			var threads int
			var script, spawner string
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				f := strings.Fields(line)
				switch {
				case f[0] == "error":
					t.Fatalf("child: %s", line)
				case f[0] == "spawner":
					spawner = f[1]
				case f[0] == "thread" && len(f) == 5 && f[1] != spawner:
					threads++
					if f[2] != tt.policy || f[3] != tt.prio || f[4] != tt.nice {
						t.Errorf("thread %s: policy %s priority %s nice %s, want %s %s %s", f[1], f[2], f[3], f[4], tt.policy, tt.prio, tt.nice)
					}
				case f[0] == "script":
					script = line
				}
			}
			t.Logf("child output:\n%s", out)
			if threads < 8 {
				t.Errorf("the child listed %d threads, want the 8 locked ones and the runtime's", threads)
			}
			if script != tt.script {
				t.Errorf("the script reported %q, want %q (SCHED_OTHER, and nice 0 or the nice value the process started with)", script, tt.script)
			}
		})
	}
}

// TestApplyCgroupWithoutRTRuntime runs the child in a cgroup v1 cpu group
// of its own, whose cpu.rt_runtime_us is 0 (a new group's default): the
// kernel refuses SCHED_RR with EPERM, as keepalived's "child process:
// cannot raise priority" shows, and the error must name the group and
// the setting.
func TestApplyCgroupWithoutRTRuntime(t *testing.T) {
	testnet.RequireRoot(t)
	base := "/sys/fs/cgroup/cpu"
	if _, err := os.Stat(filepath.Join(base, "cpu.rt_runtime_us")); err != nil {
		t.Skipf("no cgroup v1 cpu controller with realtime group scheduling at %s: %v", base, err)
	}
	cg := filepath.Join(base, fmt.Sprintf("vrt-sched-test-%d", os.Getpid()))
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.Remove(cg); err != nil {
			t.Errorf("remove cgroup %s: %v", cg, err)
		}
	})
	if b, err := os.ReadFile(filepath.Join(cg, "cpu.rt_runtime_us")); err != nil || strings.TrimSpace(string(b)) != "0" {
		t.Skipf("a new cgroup's cpu.rt_runtime_us is %q (%v), want 0", b, err)
	}
	out := runChild(t, "rt", childEnv+"_CGROUP="+cg)
	want := "has cpu.rt_runtime_us 0, which forbids realtime scheduling in it"
	if !strings.Contains(out, "error SCHED_RR priority 10 on thread") || !strings.Contains(out, cg) || !strings.Contains(out, want) {
		t.Errorf("child output %q: want an error naming %s and %q", out, cg, want)
	}
}

// TestOffRealtime: in a process at SCHED_RR, OffRealtime runs its work on
// a thread at SCHED_OTHER (work there does not count against
// RLIMIT_RTTIME, whose hard limit kills the process), that thread ends
// with the work, and the caller's thread stays at SCHED_RR.
func TestOffRealtime(t *testing.T) {
	testnet.RequireRoot(t)
	out := runChild(t, "offrt")
	for _, want := range []string{"off 0\n", "gone true\n", "caller 2\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
}

package engine

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/testutil"
)

// alive reports whether pid is a process that has not exited (a zombie
// has).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || !strings.HasPrefix(string(b[i+1:]), " Z")
}

// TestShutdownEndsHungScripts: a vrrp_script that ignores SIGTERM and
// leaves background jobs is running when the engine is stopped.
// keepalived 2.2.7 leaves none of its processes behind (measured by helper
// ac, 2026-11-24: `trap ” TERM; sleep 31 & sleep 32`, SIGTERM: 0 left).
// vipstack's engine returned without waiting for its trackers, so the
// script runner never killed the script's process group, and both sleeps
// outlived it. Now shutdown cancels the trackers and waits (bounded) until
// each run has ended its group: the script is gone when Run returns.
// Bounded: 20 s for the script to start, 5 s for its background jobs to
// be gone after Run returned.
//
// The engine runs on a node of the simulated segment but on the real
// clock, outside a synctest bubble: the script is a process, and the
// runner's grace between SIGTERM and SIGKILL must pass while the script
// runs, which virtual time does not while a goroutine waits for a
// process. The script runs as the user running the test (script_user),
// so no root is needed; in namespaces vipstack ran it as root under
// enable_script_security, which has its own tests (internal/script).
func TestShutdownEndsHungScripts(t *testing.T) {
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pids, chk := filepath.Join(dir, "pids"), filepath.Join(dir, "chk.sh")
	body := fmt.Sprintf("#!/bin/sh\ntrap '' TERM\necho $$ >> %[1]s\nsleep 31 &\necho $! >> %[1]s\nsleep 32 &\necho $! >> %[1]s\nwait\n", pids)
	if err := os.WriteFile(chk, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	// The vrrp_script goes above the instance that tracks it: keepalived
	// 2.2.7, and vipstack with it, ignores a track_script naming a
	// vrrp_script defined further down.
	conf := fmt.Sprintf(`global_defs {
    script_user %s
}
vrrp_script chk {
    script %q
    interval 1
    timeout 20
}
vrrp_instance VI_1 {
    state BACKUP
    interface eth0
    virtual_router_id 57
    priority 100
    advert_int 1
    virtual_ipaddress {
        198.18.0.100/32
    }
    track_script {
        chk
    }
}
`, u.Username, chk)
	n := (&simSegment{}).node("h", "198.18.0.1/24")
	e, _ := simEngine(t, n, conf, nil)
	stop := simRun(t, e)
	var started []int
	t.Cleanup(func() {
		for _, pid := range started {
			if alive(pid) {
				syscall.Kill(pid, syscall.SIGKILL) // ours: the script's processes, by pid
			}
		}
	})
	testutil.Eventually(t, 20*time.Second, func() error {
		l, err := os.ReadFile(pids)
		started = started[:0]
		for _, s := range strings.Fields(string(l)) {
			if pid, err := strconv.Atoi(s); err == nil {
				started = append(started, pid)
			}
		}
		if len(started) < 3 {
			return fmt.Errorf("the script and its two sleeps: %d of 3 started (%v)", len(started), err)
		}
		return nil
	})
	stop()
	// In process, the runner would still end the script after Run
	// returned; vipstack's process would have exited by then. So the
	// script itself, which the runner reaps before its run ends, must be
	// gone when Run returns; its group was sent SIGKILL then, and the
	// sleeps go as soon as the kernel delivers it.
	if alive(started[0]) {
		t.Errorf("the script (pid %d) is still running when Run returned: the engine did not wait for its trackers", started[0])
	}
	testutil.Eventually(t, 5*time.Second, func() error {
		for _, pid := range started {
			if alive(pid) {
				return fmt.Errorf("the script's process %d is still there after Run returned", pid)
			}
		}
		return nil
	})
}

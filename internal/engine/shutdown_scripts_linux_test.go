package engine_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
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
// leaves background jobs is running when vipstack is stopped. keepalived
// 2.2.7 leaves none of its processes behind (measured by helper ac,
// 2026-11-24: `trap ” TERM; sleep 31 & sleep 32`, SIGTERM: 0 left).
// vipstack's engine returned without waiting for its trackers, so the
// script runner never killed the script's process group, and both sleeps
// outlived it. Now shutdown cancels the trackers and waits (bounded) until
// each run has ended its group. Bounded: 20 s for the script to start, 5 s
// for its processes to be gone after vipstack exited.
func TestShutdownEndsHungScripts(t *testing.T) {
	bin, h, dir := scriptHost(t)
	pids, chk := filepath.Join(dir, "pids"), filepath.Join(dir, "chk.sh")
	writeScript(t, chk, fmt.Sprintf("trap '' TERM\necho $$ >> %[1]s\nsleep 31 &\necho $! >> %[1]s\nsleep 32 &\necho $! >> %[1]s\nwait\n", pids))
	text := renderConf("    enable_script_security\n    script_user root\n", vrrpInstance{
		name: "VI_1", vrid: 57, vip: "198.18.0.100",
		extra: "    track_script {\n        chk\n    }\n",
	})
	// The vrrp_script goes above the instance that tracks it: keepalived
	// 2.2.7, and vipstack with it, ignores a track_script naming a
	// vrrp_script defined further down.
	at := strings.Index(text, "vrrp_instance")
	text = text[:at] + fmt.Sprintf("vrrp_script chk {\n    script %q\n    interval 1\n    timeout 20\n}\n", chk) + text[at:]
	n, err := peers.Start(h, peers.Vipstack, text, filepath.Join(dir, "node"), bin)
	if err != nil {
		t.Fatal(err)
	}
	logOnFailure(t, n)
	var started []int
	t.Cleanup(func() {
		for _, pid := range started {
			if alive(pid) {
				syscall.Kill(pid, syscall.SIGKILL) // ours: the script's processes, by pid
			}
		}
	})
	poll(t, 20*time.Second, "the script and its two sleeps", func() (bool, error) {
		l, err := readLines(pids)
		started = started[:0]
		for _, s := range l {
			if pid, err := strconv.Atoi(s); err == nil {
				started = append(started, pid)
			}
		}
		return len(started) >= 3, err
	})
	if err := n.Term(); err != nil {
		t.Fatal(err)
	}
	poll(t, 5*time.Second, "the script's processes gone after vipstack exited", func() (bool, error) {
		for _, pid := range started {
			if alive(pid) {
				return false, nil
			}
		}
		return true, nil
	})
}

package engine_test

import (
	"cmp"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestSchedulingFromGlobalDefs runs `vipstack vrrp` with keepalived's
// scheduling keywords, OpenShift's current template's among them
// (machine-config-operator's on-prem keepalived.conf.tmpl: vrrp_rt_priority
// 50, vrrp_no_swap and the rlimit_rttime settings, "to avoid split-brain
// caused by not getting enough CPU"). The engine process must run every
// thread as keepalived 2.2.7 runs its VRRP child (measured with chrt -p and
// /proc/PID/limits): SCHED_RR at the priority with RLIMIT_RTTIME soft at
// half of vrrp_rlimit_rttime (10000 us when not set), vrrp_priority ignored
// under SCHED_RR and the nice value without it; the supervisor stays as it
// started; the check script runs as a normal process (SCHED_OTHER, nice 0
// under SCHED_RR, else the nice value vipstack started with: a script at
// realtime priority could starve the host).
func TestSchedulingFromGlobalDefs(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	tests := []struct {
		name    string
		global  string
		policy  string // of every engine thread: 0 SCHED_OTHER, 2 SCHED_RR
		prio    string // rt_priority
		nice    string // "": the supervisor's (vrrp_priority is not applied)
		script  string // the check script's policy and nice; "0 ": and the supervisor's nice
		rtSoft  string // /proc/PID/limits' "Max realtime timeout", soft
		rtHard  string // and hard
		locked  bool
		logLine string
	}{
		{
			name:   "OpenShift's settings and vrrp_priority",
			global: "vrrp_rt_priority 50\n    vrrp_priority -5\n    vrrp_no_swap\n    vrrp_rlimit_rttime 100000\n    bfd_rlimit_rttime 100000\n    checker_rlimit_rttime 100000",
			policy: "2", prio: "50", script: "0 0", rtSoft: "50000", rtHard: "100000", locked: true,
			logLine: "SCHED_RR priority 50 on",
		},
		{
			name:   "vrrp_rt_priority alone: keepalived's default RLIMIT_RTTIME",
			global: "vrrp_rt_priority 30",
			policy: "2", prio: "30", script: "0 0", rtSoft: "5000", rtHard: "10000",
			logLine: "RLIMIT_RTTIME 10000 us (soft 5000 us)",
		},
		{
			name:   "vrrp_priority alone",
			global: "vrrp_priority -5\n    vrrp_rlimit_rttime 30000",
			policy: "0", prio: "0", nice: "-5", script: "0 ", rtSoft: "unlimited", rtHard: "unlimited",
			logLine: "SCHED_OTHER nice -5 on",
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vrt"})
			h := topo.Hosts[0]
			dir := t.TempDir()
			out := filepath.Join(dir, "policy")
			script := filepath.Join(dir, "chk.sh")
			// Fields 41 and 19 of /proc/PID/stat: policy and nice.
			if err := os.WriteFile(script, []byte("#!/bin/sh\nawk '{print $41, $19}' /proc/$$/stat > "+out+".tmp && mv "+out+".tmp "+out+"\n"), 0o700); err != nil {
				t.Fatal(err)
			}
			vip := netip.MustParseAddr(fmt.Sprintf("198.18.0.%d", 100+i))
			conf := fmt.Sprintf(`global_defs {
    router_id n1
    %s
}
vrrp_script chk {
    script "%s"
    interval 1
}
vrrp_instance VI_1 {
    state BACKUP
    interface %s
    virtual_router_id 71
    priority 100
    advert_int 1
    virtual_ipaddress {
        %s/32 label vip
    }
    track_script {
        chk
    }
}
`, tt.global, script, h.Link, vip)
			n, err := peers.Start(h, peers.Vipstack, conf, t.TempDir(), bin)
			if err != nil {
				t.Fatal(err)
			}
			logOnFailure(t, n)
			if _, err := peers.WaitSoleHolder(topo.Hosts, vip, h, time.Second, 15*time.Second); err != nil {
				t.Fatal(err)
			}
			pid, err := n.EnginePid()
			if err != nil {
				t.Fatal(err)
			}
			// The nice value vipstack started with: the test's (`nice go
			// test` raises it).
			super := threadStats(t, n.Pid())
			for _, th := range super {
				if th.policy != "0" || th.nice != super[0].nice {
					t.Errorf("supervisor %d thread %s: policy %s nice %s, want 0 (SCHED_OTHER) and %s: only the engine's scheduling changes", n.Pid(), th.tid, th.policy, th.nice, super[0].nice)
				}
			}
			nice, script := cmp.Or(tt.nice, super[0].nice), tt.script
			if script == "0 " {
				script += super[0].nice
			}
			// Once now, and again after the check script ran (the runtime
			// may have started threads meanwhile; they must have
			// inherited the policy: nothing sets them later).
			checkThreads(t, pid, tt.policy, tt.prio, nice, super[0].nice)
			waitFile(t, out, 10*time.Second)
			threads := checkThreads(t, pid, tt.policy, tt.prio, nice, super[0].nice)
			limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
			if err != nil {
				t.Fatal(err)
			}
			m := regexp.MustCompile(`Max realtime timeout\s+(\S+)\s+(\S+)\s+us`).FindSubmatch(limits)
			if m == nil {
				t.Fatalf("no realtime timeout in the engine's limits:\n%s", limits)
			}
			// At each SIGXCPU it sends, the kernel raises the soft limit by
			// a second (posix-cpu-timers.c). On a loaded machine the
			// engine's start can reach the soft limit; it logs the signal.
			soft, hard := string(m[1]), string(m[2])
			xcpu := strings.Contains(n.Log(), "(SIGXCPU)")
			if hard != tt.rtHard || (soft != tt.rtSoft && !(xcpu && raisedBySeconds(soft, tt.rtSoft))) {
				t.Errorf("engine RLIMIT_RTTIME soft %s hard %s us, want %s %s (the soft one raised by whole seconds after a SIGXCPU, logged: %v):\n%s", soft, hard, tt.rtSoft, tt.rtHard, xcpu, limits)
			}
			lck := vmLck(t, pid)
			if (lck > 0) != tt.locked {
				t.Errorf("VmLck %d kB, want memory locked: %v", lck, tt.locked)
			}
			t.Logf("engine %d: %d threads at policy %s priority %s nice %s, VmLck %d kB", pid, threads, tt.policy, tt.prio, nice, lck)
			policy, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(policy)); got != script {
				t.Errorf("the check script ran with policy and nice %q, want %q: scripts must not inherit the engine's scheduling", got, script)
			}
			if !strings.Contains(n.Log(), tt.logLine) {
				t.Errorf("the log does not say %q", tt.logLine)
			}
		})
	}
}

// raisedBySeconds reports whether soft is want plus one or more whole
// seconds, in microseconds.
func raisedBySeconds(soft, want string) bool {
	s, err1 := strconv.Atoi(soft)
	w, err2 := strconv.Atoi(want)
	return err1 == nil && err2 == nil && s > w && (s-w)%1000000 == 0
}

type threadStat struct {
	tid, prio, policy, nice string
	spawner                 bool // SCHED_FLAG_RESET_ON_FORK: the thread that starts scripts
}

// threadStats reads every thread's rt_priority, policy and nice from
// /proc/PID/task/TID/stat, and its SCHED_FLAG_RESET_ON_FORK from
// sched_getattr.
func threadStats(t *testing.T, pid int) []threadStat {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var out []threadStat
	for _, task := range tasks {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			continue // ended meanwhile
		}
		// Fields after the command (which is in parentheses): nice is
		// field 19, rt_priority 40, policy 41.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
		th := threadStat{tid: task.Name(), nice: f[16], prio: f[37], policy: f[38]}
		if tid, err := strconv.Atoi(task.Name()); err == nil {
			if a, err := unix.SchedGetAttr(tid, 0); err == nil {
				th.spawner = a.Flags&unix.SCHED_FLAG_RESET_ON_FORK != 0
			}
		}
		out = append(out, th)
	}
	return out
}

// checkThreads checks every thread of the engine pid but the one that
// starts scripts (which runs at the nice value vipstack started with,
// spawnerNice), and that there is one such thread.
func checkThreads(t *testing.T, pid int, policy, prio, nice, spawnerNice string) int {
	t.Helper()
	ths := threadStats(t, pid)
	spawners := 0
	for _, th := range ths {
		want := nice
		if th.spawner {
			spawners++
			want = spawnerNice
		}
		if th.policy != policy || th.prio != prio || th.nice != want {
			t.Errorf("engine thread %s (spawner %v): policy %s rt_priority %s nice %s, want %s %s %s", th.tid, th.spawner, th.policy, th.prio, th.nice, policy, prio, want)
		}
	}
	if spawners != 1 {
		t.Errorf("engine: %d threads with SCHED_FLAG_RESET_ON_FORK, want 1 (the one that starts scripts)", spawners)
	}
	return len(ths)
}

func vmLck(t *testing.T, pid int) int {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`VmLck:\s+(\d+) kB`).FindSubmatch(status)
	if m == nil {
		t.Fatalf("no VmLck in the engine's status:\n%s", status)
	}
	k, _ := strconv.Atoi(string(m[1]))
	return k
}

// waitFile polls for path, at most d.
func waitFile(t *testing.T, path string, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); ; {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within %v", path, d)
		}
		time.Sleep(50 * time.Millisecond) // polling a file another process writes, bounded
	}
}

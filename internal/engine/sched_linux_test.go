package engine_test

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestSchedulingFromGlobalDefs runs `vipstack vrrp` with the global_defs of
// OpenShift's current keepalived template (machine-config-operator's
// on-prem keepalived.conf.tmpl: vrrp_rt_priority 50, vrrp_no_swap and the
// rlimit_rttime settings, "to avoid split-brain caused by not getting
// enough CPU"), which vipstack refused before. The engine process must run
// every thread at SCHED_RR 50 (threads started later included), have
// RLIMIT_RTTIME 100000 us and locked memory, hold its VIP, and run its
// check script as a normal process (a script at realtime priority could
// starve the host).
func TestSchedulingFromGlobalDefs(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vsBrt"})
	h := topo.Hosts[0]
	dir := t.TempDir()
	out := filepath.Join(dir, "policy")
	script := filepath.Join(dir, "chk.sh")
	// Field 41 of /proc/PID/stat is the scheduling policy (0 SCHED_OTHER,
	// 2 SCHED_RR).
	if err := os.WriteFile(script, []byte("#!/bin/sh\nawk '{print $41}' /proc/$$/stat > "+out+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	vip := netip.MustParseAddr("198.18.0.100")
	conf := fmt.Sprintf(`global_defs {
    router_id n1
    vrrp_garp_master_refresh 60
    max_auto_priority 99
    vrrp_rt_priority 50
    vrrp_no_swap
    vrrp_rlimit_rttime 100000
    bfd_rlimit_rttime 100000
    checker_rlimit_rttime 100000
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
`, script, h.Link, vip)
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
	// Every thread at SCHED_RR 50, those the runtime started after the
	// engine applied it too (its sweep runs once a second): polled until
	// so, for at most 5 s.
	var notRR []string
	var threads int
	for deadline := time.Now().Add(5 * time.Second); ; {
		notRR, threads = nil, 0
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
			if err != nil {
				continue // ended meanwhile
			}
			threads++
			// Fields after the command (which is in parentheses):
			// rt_priority is field 40, policy 41.
			f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
			if prio, policy := f[37], f[38]; prio != "50" || policy != "2" {
				notRR = append(notRR, fmt.Sprintf("thread %s: rt_priority %s policy %s", task.Name(), prio, policy))
			}
		}
		if len(notRR) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // polling /proc, bounded by deadline
	}
	for _, m := range notRR {
		t.Errorf("engine %s, want rt_priority 50 and policy 2 (SCHED_RR)", m)
	}
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`Max realtime timeout\s+100000\s+100000\s+us`).Match(limits) {
		t.Errorf("engine limits, want RLIMIT_RTTIME 100000 us:\n%s", limits)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	lck := regexp.MustCompile(`VmLck:\s+(\d+) kB`).FindSubmatch(status)
	rss := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(status)
	if lck == nil || rss == nil {
		t.Fatalf("no VmLck or VmRSS in the engine's status:\n%s", status)
	}
	if k, _ := strconv.Atoi(string(lck[1])); k == 0 {
		t.Errorf("VmLck 0 kB: vrrp_no_swap did not lock the engine's memory")
	}
	t.Logf("engine %d: %d threads at SCHED_RR 50, VmLck %s kB, VmRSS %s kB", pid, threads, lck[1], rss[1])

	policy, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the check script did not run: %v", err)
	}
	if got := strings.TrimSpace(string(policy)); got != "0" {
		t.Errorf("the check script ran with scheduling policy %s, want 0 (SCHED_OTHER): scripts must not inherit the realtime priority", got)
	}
	if !strings.Contains(n.Log(), "SCHED_RR priority 50") {
		t.Errorf("the log does not say what was applied")
	}
}

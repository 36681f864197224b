package engine_test

// The third part of the interop audit (see the table at the top of
// interop_audit_linux_test.go): a vrrp_sync_group whose member waits for
// its tracked script's first result, a node stopped during that wait, and
// a master leaving during a backup's preempt_delay, each run with a row of
// keepalived alone (the reference) and rows with vipstack.

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// audit3Prefix starts the namespace names of the tests in this file.
const audit3Prefix = "vsq"

// vrrpCapture is tcpdump on a host, recording the VRRP adverts it sees as
// lines ("<source> vrid <n> prio <p>"), in arrival order.
type vrrpCapture struct {
	mu    sync.Mutex
	lines []string
}

// startTcpdump runs the tcpdump command args on h for the rest of the
// test and returns its standard output once it says it listens (its
// "listening on" line on standard error).
func startTcpdump(t *testing.T, h *testnet.Host, args ...string) io.Reader {
	t.Helper()
	dump := h.Command(args[0], args[1:]...)
	out, err := dump.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errOut, err := dump.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.StartFor(t, dump); err != nil {
		t.Fatalf("tcpdump: %v", err)
	}
	listening := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(errOut)
		ok := false
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening on") {
				ok = true
				break
			}
		}
		listening <- ok
		for sc.Scan() {
		}
	}()
	select {
	case ok := <-listening:
		if !ok {
			t.Fatal("tcpdump ended without listening")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("tcpdump did not start listening")
	}
	return out
}

// captureVRRP starts tcpdump on h for VRRP packets matching filter (added
// to "ip proto 112") and returns once it listens.
func captureVRRP(t *testing.T, h *testnet.Host, filter string) *vrrpCapture {
	t.Helper()
	expr := "ip proto 112"
	if filter != "" {
		expr += " and " + filter
	}
	// Bounded: at most 20000 packets or 120 s, and stopped with the test.
	out := startTcpdump(t, h, "timeout", "120", "tcpdump", "-i", h.Link, "-n", "-l", "-c", "20000", expr)
	c := &vrrpCapture{}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			// "12:00:00.000000 IP 198.18.0.11 > 224.0.0.18: VRRPv3, Advertisement, vrid 61, prio 150, intvl 10cs, length 12"
			f := strings.Fields(sc.Text())
			if len(f) < 3 {
				continue
			}
			var vrid, prio string
			for i, w := range f {
				switch w {
				case "vrid":
					if i+1 < len(f) {
						vrid = strings.TrimSuffix(f[i+1], ",")
					}
				case "prio":
					if i+1 < len(f) {
						prio = strings.TrimSuffix(f[i+1], ",")
					}
				}
			}
			c.mu.Lock()
			c.lines = append(c.lines, fmt.Sprintf("%s vrid %s prio %s", f[2], vrid, prio))
			c.mu.Unlock()
		}
	}()
	return c
}

// Lines returns the adverts captured so far.
func (c *vrrpCapture) Lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.lines)
}

// callLogs reads the notify recorder's logs in dir: one file per script
// (its first argument), each in call order.
func callLogs(t *testing.T, dir string) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "calls-*.log"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, f := range files {
		lines, err := readLines(f)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "calls-"), ".log")] = lines
	}
	return out
}

// syncGroupConf is VI_1 (VRID 61, 198.18.0.101) and VI_2 (VRID 62,
// 198.18.0.102) at prio, VRRPv3 at 0.1 s, in a vrrp_sync_group G if group
// is set. With rec set, every instance and the group run it as
// notify_master/_backup/_fault/_stop and as the generic notify (first
// argument: who and which); with chk set, VI_2 tracks it with weight 0.
func syncGroupConf(prio int, group bool, chk, rec string) string {
	var b strings.Builder
	b.WriteString("global_defs {\n    vrrp_version 3\n    enable_script_security\n    script_user root\n}\n")
	if chk != "" {
		fmt.Fprintf(&b, "vrrp_script chk {\n    script %q\n    interval 1\n    timeout 20\n    weight 0\n    rise 1\n    fall 1\n}\n", chk)
	}
	notify := func(who string) {
		if rec == "" {
			return
		}
		for _, s := range []string{"master", "backup", "fault", "stop"} {
			fmt.Fprintf(&b, "    notify_%s %q\n", s, rec+" "+who+"_"+s)
		}
		fmt.Fprintf(&b, "    notify %q\n", rec+" "+who+"_notify")
	}
	if group {
		b.WriteString("vrrp_sync_group G {\n    group {\n        VI_1\n        VI_2\n    }\n")
		notify("G")
		b.WriteString("}\n")
	}
	for i, vip := range []string{"198.18.0.101/32", "198.18.0.102/32"} {
		name := fmt.Sprintf("VI_%d", i+1)
		fmt.Fprintf(&b, "vrrp_instance %s {\n    state BACKUP\n    interface eth0\n    virtual_router_id %d\n    priority %d\n    advert_int 0.1\n    virtual_ipaddress {\n        %s\n    }\n", name, 61+i, prio, vip)
		if chk != "" && i == 1 {
			b.WriteString("    track_script {\n        chk\n    }\n")
		}
		notify(name)
		b.WriteString("}\n")
	}
	return b.String()
}

// notifyCalls is what the notify recorder logs for one transition of an
// instance (or group) who: its specific script and the generic notify.
func notifyCalls(who, state, prio string) map[string][]string {
	kind := "INSTANCE"
	if who == "G" {
		kind = "GROUP"
	}
	specific := map[string]string{"BACKUP": "backup", "MASTER": "master", "FAULT": "fault", "STOP": "stop"}[state]
	return map[string][]string{
		who + "_" + specific: {"call"},
		who + "_notify":      {fmt.Sprintf("call %s %s %s %s", kind, who, state, prio)},
	}
}

// joinCalls appends the calls of each step, in order.
func joinCalls(steps ...map[string][]string) map[string][]string {
	out := map[string][]string{}
	for _, st := range steps {
		for k, v := range st {
			out[k] = append(out[k], v...)
		}
	}
	return out
}

// TestInteropAuditSyncGroupFirstProbe: VI_1 and VI_2 on a node at 150,
// VI_2 tracking a weight-0 script whose first result the test holds back
// (every probe blocks until it lets them end), beside a keepalived node at
// 100 with the same instances that holds both VIPs. With the two in a
// vrrp_sync_group, keepalived 2.2.7 (measured, the keepalived rows) keeps
// the whole group in INIT while the probe runs: VI_1 too sends no advert
// (none captured from the node), takes no VIP and runs no notify script.
// On the first success VI_2 enters BACKUP, the group syncs VI_1 to BACKUP
// (log: "VRRP_Group(G) Syncing instances to BACKUP state"), and both
// preempt together; every transition runs the instance's specific script
// and notify, and the group's. SIGTERM during the wait sends nothing and
// runs notify_stop and notify ... STOP for each instance (at its configured
// priority) and for the group (GROUP G STOP 0), though none ever left INIT.
// Without a group VI_1 runs on its own and VI_2 alone waits, and is
// stopped alike. The scripts' calls are compared per script (their
// relative order is free), and the adverts sent during the wait by VRID.
//
// vipstack started VI_1 in BACKUP and put it in FAULT at once for the
// group (notify_fault, notify INSTANCE VI_1 FAULT 150), and ran no STOP
// call for an instance stopped while waiting, nor the group's.
func TestInteropAuditSyncGroupFirstProbe(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	stop := func(who, prio string) map[string][]string { return notifyCalls(who, "STOP", prio) }
	for _, tc := range []struct {
		name  string
		group bool
		stop  bool // SIGTERM during the wait instead of letting it end
		// silent are the VRIDs the node sends no advert for during the
		// wait; waiting are the instances (and group) whose notify
		// scripts run none then.
		silent, waiting []string
		calls           map[string][]string // every call, when the node has stopped
	}{
		{name: "group, first probe passes", group: true,
			silent: []string{"61", "62"}, waiting: []string{"G", "VI_1", "VI_2"},
			calls: joinCalls(
				notifyCalls("VI_1", "BACKUP", "150"), notifyCalls("VI_2", "BACKUP", "150"), notifyCalls("G", "BACKUP", "0"),
				notifyCalls("VI_1", "MASTER", "150"), notifyCalls("VI_2", "MASTER", "150"), notifyCalls("G", "MASTER", "0"),
				stop("VI_1", "150"), stop("VI_2", "150"), stop("G", "0"))},
		{name: "group, stopped during the wait", group: true, stop: true,
			silent: []string{"61", "62"}, waiting: []string{"G", "VI_1", "VI_2"},
			calls: joinCalls(stop("VI_1", "150"), stop("VI_2", "150"), stop("G", "0"))},
		{name: "no group, stopped during the wait", stop: true,
			silent: []string{"62"}, waiting: []string{"VI_2"},
			calls: joinCalls(notifyCalls("VI_1", "BACKUP", "150"), notifyCalls("VI_1", "MASTER", "150"), stop("VI_1", "150"),
				stop("VI_2", "150"))},
	} {
		for _, impl := range []peers.Impl{peers.Keepalived, peers.Vipstack} {
			t.Run(tc.name+"/"+string(impl), func(t *testing.T) {
				t.Parallel()
				topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: audit3Prefix})
				subH, peerH := topo.Hosts[0], topo.Hosts[1]
				vips := []netip.Addr{netip.MustParseAddr("198.18.0.101"), netip.MustParseAddr("198.18.0.102")}
				dir := t.TempDir() // root-owned, under sticky /tmp: passes enable_script_security
				rec, chk := filepath.Join(dir, "rec.sh"), filepath.Join(dir, "chk.sh")
				hold, probing := filepath.Join(dir, "hold"), filepath.Join(dir, "probing")
				writeScript(t, rec, fmt.Sprintf("who=$1; shift; echo call \"$@\" >> %s/calls-$who.log\n", dir))
				// Every probe says it started, then waits while the hold
				// file exists (at most 15 s), then passes. keepalived 2.2.7
				// starts a second probe while the first one runs (logging
				// "Track script chk is already running, expect idle -
				// skipping run"), so each must wait.
				writeScript(t, chk, fmt.Sprintf("touch %[2]s\ni=0\nwhile [ -e %[1]s ] && [ $i -lt 150 ]; do sleep 0.1; i=$((i+1)); done\nexit 0\n", hold, probing))
				if err := os.WriteFile(hold, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				startText(t, peerH, peers.Keepalived, syncGroupConf(100, tc.group, "", ""))
				for _, v := range vips {
					if _, err := peers.WaitSoleHolder(topo.Hosts, v, peerH, 300*time.Millisecond, 20*time.Second); err != nil {
						t.Fatalf("the keepalived peer alone: %v", err)
					}
				}
				capt := captureVRRP(t, peerH, "src "+subH.IPv4.Addr().String())
				sub := startText(t, subH, impl, syncGroupConf(150, tc.group, chk, rec))
				poll(t, 10*time.Second, "the first probe started", func() (bool, error) {
					_, err := os.Stat(probing)
					return err == nil, nil
				})
				// During the wait (checked over 1.5 s, fifteen adverts): the
				// peer keeps each VIP the node cannot take, the node sends
				// no advert for the waiting instances and runs none of
				// their scripts.
				if tc.group {
					neverHolds(t, topo.Hosts, vips[0], peerH, time.Second, "during the first probe")
				} else if _, err := peers.WaitSoleHolder(topo.Hosts, vips[0], subH, 300*time.Millisecond, 10*time.Second); err != nil {
					t.Fatalf("VI_1, outside any group, during VI_2's first probe: %v", err)
				}
				neverHolds(t, topo.Hosts, vips[1], peerH, 500*time.Millisecond, "during the first probe")
				for _, l := range capt.Lines() {
					for _, v := range tc.silent {
						if strings.Contains(l, " vrid "+v+" ") {
							t.Errorf("during the first probe the node advertised: %s", l)
						}
					}
				}
				for who, got := range callLogs(t, dir) {
					for _, w := range tc.waiting {
						if strings.HasPrefix(who, w+"_") {
							t.Errorf("during the first probe %s ran: %q", who, got)
						}
					}
				}
				if t.Failed() {
					t.FailNow()
				}
				if !tc.stop {
					if err := os.Remove(hold); err != nil {
						t.Fatal(err)
					}
					for _, v := range vips {
						if _, err := peers.WaitSoleHolder(topo.Hosts, v, subH, 500*time.Millisecond, 20*time.Second); err != nil {
							t.Fatalf("after the first probe: %v", err)
						}
					}
				}
				if err := sub.Term(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(500 * time.Millisecond) // anything more would come now that the node exited; observing
				if diff := cmp.Diff(tc.calls, callLogs(t, dir)); diff != "" {
					t.Errorf("notify calls per script (-keepalived's +got):\n%s", diff)
				}
			})
		}
	}
}

// TestInteropAuditPreemptDelayMasterLeaves: a master leaving (priority 0
// advert) during a backup's preempt_delay is taken over by that backup
// after its skew time, not after a master-down interval: the delay holds
// back preemption, and a master leaving is none. Three nodes in one group,
// VRRPv2 at 1 s: a lower master at 50, a node at 150 that restarts with
// preempt_delay 10, and one at 200 (no delay) that preempts the lower at
// once and then stops during 150's delay. The order of the adverts on the
// wire tells the two apart without timing anything: after 200's priority
// 0, 150 (skew 0.41 s) advertises before the lower node's skew (0.80 s)
// runs out, so the first advert is 150's and the lower node sends none;
// a 150 that waited its master-down interval (3.41 s) would let the lower
// node become master first, and its adverts would come before 150's.
// keepalived 2.2.7 on every node (the keepalived row, measured): after
// "200 prio 0" the next advert is 150's, and the lower node sends none.
func TestInteropAuditPreemptDelayMasterLeaves(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	const delay = 10 * time.Second
	for _, tc := range []struct {
		name                    string
		lower, delayed, highest peers.Impl
	}{
		{name: "keepalived-only", lower: peers.Keepalived, delayed: peers.Keepalived, highest: peers.Keepalived},
		{name: "vipstack-delayed", lower: peers.Keepalived, delayed: peers.Vipstack, highest: peers.Keepalived},
		{name: "keepalived-delayed", lower: peers.Vipstack, delayed: peers.Keepalived, highest: peers.Vipstack},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			topo := testnet.New(t, testnet.Options{Hosts: 3, Prefix: audit3Prefix})
			lowH, delH, highH := topo.Hosts[0], topo.Hosts[1], topo.Hosts[2]
			vip := netip.MustParseAddr("198.18.0.100")
			conf := func(prio int) peers.Conf {
				return peers.Conf{Version: 2, Interval: time.Second, VRID: 51, Priority: prio, VIP: netip.PrefixFrom(vip, 32), Auth: "secret1"}
			}
			delayLine := fmt.Sprintf("preempt_delay %d", int(delay.Seconds()))
			startText(t, lowH, tc.lower, withLines(t, conf(50), lowH))
			if _, err := peers.WaitSoleHolder(topo.Hosts, vip, lowH, 500*time.Millisecond, 20*time.Second); err != nil {
				t.Fatalf("the lower node alone: %v", err)
			}
			capt := captureVRRP(t, lowH, "")
			startText(t, delH, tc.delayed, withLines(t, conf(150), delH, delayLine))
			restarted := time.Now()
			high := startText(t, highH, tc.highest, withLines(t, conf(200), highH))
			if _, err := peers.WaitSoleHolder(topo.Hosts, vip, highH, 500*time.Millisecond, 5*time.Second); err != nil {
				t.Fatalf("200 preempts at once: %v", err)
			}
			if err := high.Term(); err != nil {
				t.Fatal(err)
			}
			// 150 ends up holding the VIP either way (at the latest when
			// its delay is over); the adverts say how it got there.
			if _, err := peers.WaitSoleHolder(topo.Hosts, vip, delH, time.Second, time.Until(restarted.Add(delay+10*time.Second))); err != nil {
				t.Errorf("after 200 stopped: %v", err)
			}
			lines := capt.Lines()
			left := slices.Index(lines, highH.IPv4.Addr().String()+" vrid 51 prio 0")
			if left < 0 {
				t.Fatalf("no priority 0 advert from 200 captured: %q", lines)
			}
			after := lines[left+1:]
			t.Logf("adverts after 200's priority 0: %q", after[:min(len(after), 4)])
			if want := delH.IPv4.Addr().String() + " vrid 51 prio 150"; len(after) == 0 || after[0] != want {
				t.Errorf("after 200's priority 0 advert the first advert is %q, want 150's %q (150 took over after its skew time, before the lower node's)", after[:min(len(after), 1)], want)
			}
			for _, l := range after {
				if strings.HasPrefix(l, lowH.IPv4.Addr().String()+" ") {
					t.Errorf("the lower node advertised after 200 left (it became master before 150): %q", l)
					break
				}
			}
		})
	}
}

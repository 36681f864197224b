package engine

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/track"
	"github.com/vipstack/vipstack/internal/vrrp/transport"
)

// Notify scripts on the simulated segment. They run as processes, as the
// user running the test (script_user), so no root is needed: synctest.Wait
// returns once they have ended, as a goroutine waiting for a process is not
// durably blocked. Tracked scripts are in-process probes (simProbes).
//
// The tables of calls are keepalived 2.2.7's, measured: the namespace tests
// TestInteropNotify and TestInteropSyncGroupFirstProbe run keepalived
// through the same steps and check it still makes them (their keepalived
// rows), so they are exported to package engine_test.

// simScriptUser replaces, in a keepalived.conf text, enable_script_security
// and `script_user root` by `script_user` the user running the test: the
// scripts run as that user, without the root-only path check.
func simScriptUser(t *testing.T, text string) string {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return replaceFirst(t, text, "    enable_script_security\n    script_user root\n", "    script_user "+u.Username+"\n")
}

// simWithLines adds lines at the end of the (last) vrrp_instance block of
// text.
func simWithLines(text string, lines ...string) string {
	if len(lines) == 0 {
		return text
	}
	i := strings.LastIndex(text, "}")
	return text[:i] + "    " + strings.Join(lines, "\n    ") + "\n" + text[i:]
}

// writeRecorder writes an executable shell script with body.
func writeRecorder(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// ReadCallLines returns the complete lines of path (those a writer has
// ended with a newline), none if it does not exist yet.
func ReadCallLines(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s := string(b)
	end := strings.LastIndexByte(s, '\n')
	if end < 0 {
		return nil, nil
	}
	return strings.Split(s[:end], "\n"), nil
}

// NotifyStep is one step of the notify tests: the calls of the specific
// notify_* scripts and of the generic notify it adds.
type NotifyStep struct {
	Name             string
	Specific, Notify []string
}

// NotifyCase is a start of the notify tests: its first steps.
type NotifyCase struct {
	Name      string
	FailFirst bool // the script fails at start until the test lets it pass
	Start     []NotifyStep
}

// The notify tests run one instance with every notify script
// (notify_master, notify_backup, notify_fault, notify_stop and the generic
// notify, which ipfailover renders) through the same transitions, and
// compare the calls made: which scripts, with which arguments, in which
// order, and on shutdown. The instance (priority 100, VRRPv3 0.1 s)
// tracks a weight-0 script that takes 0.3 s; a peer at 200 comes and goes.
// The recorder appends the arguments it got to one log for the specific
// scripts (their own name, from the configuration, as first argument) and
// one for the generic notify, each in call order (the specific script and
// notify of one transition are started together, so their relative order
// is free).
//
// keepalived 2.2.7's calls, measured with TestInteropNotify:
//
//	step                          specific   notify
//	start, first probe passes     backup     INSTANCE VI_1 BACKUP 100
//	  (none while it runs: INIT)
//	start, first probe fails      fault      INSTANCE VI_1 FAULT 100
//	  then it passes              backup     INSTANCE VI_1 BACKUP 100
//	alone: master down            master     INSTANCE VI_1 MASTER 100
//	a peer at 200 preempts        backup     INSTANCE VI_1 BACKUP 100
//	the peer stops                master     INSTANCE VI_1 MASTER 100
//	the script fails (weight 0)   fault      INSTANCE VI_1 FAULT 100
//	it passes again               backup,    INSTANCE VI_1 BACKUP 100,
//	                              master     INSTANCE VI_1 MASTER 100
//	SIGTERM as master             stop       INSTANCE VI_1 STOP 100
//	                              (no notify_backup; the priority stays the
//	                              configured one in every call)
//
// vipstack entered FAULT at once while the first probe ran and ran
// notify_fault and notify FAULT on every start; keepalived stays in INIT
// and runs nothing until the first result.
var (
	NotifyCommon = []NotifyStep{
		{Name: "alone: master down", Specific: []string{"master"}, Notify: []string{"INSTANCE VI_1 MASTER 100"}},
		{Name: "a peer at 200 preempts", Specific: []string{"backup"}, Notify: []string{"INSTANCE VI_1 BACKUP 100"}},
		{Name: "the peer stops", Specific: []string{"master"}, Notify: []string{"INSTANCE VI_1 MASTER 100"}},
		{Name: "the script fails", Specific: []string{"fault"}, Notify: []string{"INSTANCE VI_1 FAULT 100"}},
		{Name: "the script passes again", Specific: []string{"backup", "master"}, Notify: []string{"INSTANCE VI_1 BACKUP 100", "INSTANCE VI_1 MASTER 100"}},
		{Name: "SIGTERM as master", Specific: []string{"stop"}, Notify: []string{"INSTANCE VI_1 STOP 100"}},
	}
	NotifyCases = []NotifyCase{
		{Name: "first probe passes",
			Start: []NotifyStep{{Name: "start", Specific: []string{"backup"}, Notify: []string{"INSTANCE VI_1 BACKUP 100"}}}},
		{Name: "first probe fails", FailFirst: true,
			Start: []NotifyStep{
				{Name: "start", Specific: []string{"fault"}, Notify: []string{"INSTANCE VI_1 FAULT 100"}},
				{Name: "the script passes", Specific: []string{"backup"}, Notify: []string{"INSTANCE VI_1 BACKUP 100"}}}},
	}
)

// NotifyRecorder is the body of the recorder script of the notify tests:
// the generic notify's calls (first argument "notify") go to anyLog, the
// others to specLog.
func NotifyRecorder(specLog, anyLog string) string {
	return fmt.Sprintf("if [ \"$1\" = notify ]; then shift; echo \"$@\" >> %s; else echo \"$@\" >> %s; fi\n", anyLog, specLog)
}

// NotifyLines are the notify directives of the notify tests for the
// recorder rec.
func NotifyLines(rec string) []string {
	return []string{
		fmt.Sprintf("notify_master %q", rec+" master"),
		fmt.Sprintf("notify_backup %q", rec+" backup"),
		fmt.Sprintf("notify_fault %q", rec+" fault"),
		fmt.Sprintf("notify_stop %q", rec+" stop"),
	}
}

// TestNotify is TestInteropNotify's vipstack row on the simulated segment:
// the engine makes keepalived's calls (NotifyCommon, NotifyCases) through
// the same transitions, the peer at 200 an engine, the tracked script a
// probe that takes 0.3 s of virtual time and fails while a flag is set,
// and SIGTERM the end of Run.
func TestNotify(t *testing.T) {
	for _, tc := range NotifyCases {
		t.Run(tc.Name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				seg := &simSegment{}
				sub, peer := seg.node("node1", "198.18.0.1/24"), seg.node("node2", "198.18.0.2/24")
				nodes := []*simNode{sub, peer}
				vip := netip.MustParseAddr("198.18.0.100")
				dir := t.TempDir()
				specLog, anyLog := filepath.Join(dir, "specific.log"), filepath.Join(dir, "notify.log")
				rec, chk := filepath.Join(dir, "rec.sh"), filepath.Join(dir, "chk.sh")
				writeRecorder(t, rec, NotifyRecorder(specLog, anyLog))
				var fault atomic.Bool
				fault.Store(tc.FailFirst)
				probe := flagProbe{fail: &fault}
				conf := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 51, Priority: 100, VIP: netip.PrefixFrom(vip, 32),
					Script: chk, Weight: 0, Notify: rec + " notify"}
				holder := func(n *simNode, why string) {
					t.Helper()
					simWaitSole(t, nodes, vip, n, 500*time.Millisecond, 20*time.Second, why)
				}
				none := func(why string) {
					t.Helper()
					simWaitFor(t, why, func() (bool, string) {
						hs := simHolders(nodes, vip)
						return len(hs) == 0, fmt.Sprintf("%d holders", len(hs))
					})
				}
				var wantSpec, wantAny []string
				// calls waits until both logs hold as many calls as
				// keepalived made by the end of st, and compares them
				// (the next step's may have started: the last step
				// compares whole logs).
				calls := func(st NotifyStep, last bool) {
					t.Helper()
					wantSpec, wantAny = append(wantSpec, st.Specific...), append(wantAny, st.Notify...)
					var gotSpec, gotAny []string
					simWaitFor(t, st.Name+": the notify scripts ran", func() (bool, string) {
						var err1, err2 error
						gotSpec, err1 = ReadCallLines(specLog)
						gotAny, err2 = ReadCallLines(anyLog)
						return len(gotSpec) >= len(wantSpec) && len(gotAny) >= len(wantAny), fmt.Sprintf("%q, %q (%v)", gotSpec, gotAny, errors.Join(err1, err2))
					})
					if !last {
						gotSpec, gotAny = gotSpec[:len(wantSpec)], gotAny[:len(wantAny)]
					}
					if diff := cmp.Diff(wantSpec, gotSpec); diff != "" {
						t.Errorf("%s: notify_* calls (-keepalived's +got):\n%s", st.Name, diff)
					}
					if diff := cmp.Diff(wantAny, gotAny); diff != "" {
						t.Errorf("%s: notify calls (-keepalived's +got):\n%s", st.Name, diff)
					}
					if t.Failed() {
						t.FailNow()
					}
				}

				text := simWithLines(simScriptUser(t, simConf(t, conf, sub.name)), NotifyLines(rec)...)
				e, _ := simEngine(t, sub, text, nil, simProbes(func(*keepalived.Script) track.Check {
					return slowFlagProbe{d: 300 * time.Millisecond, flag: probe}
				}))
				stopSub := simRun(t, e)
				for i, st := range tc.Start {
					if i > 0 {
						fault.Store(false)
					}
					calls(st, false)
				}
				holder(sub, NotifyCommon[0].Name)
				calls(NotifyCommon[0], false)

				peerConf := conf
				peerConf.Priority, peerConf.Script, peerConf.Notify = 200, "", ""
				pe, _ := simEngine(t, peer, simConf(t, peerConf, peer.name), nil)
				stopPeer := simRun(t, pe)
				holder(peer, NotifyCommon[1].Name)
				calls(NotifyCommon[1], false)
				stopPeer()
				holder(sub, NotifyCommon[2].Name)
				calls(NotifyCommon[2], false)
				fault.Store(true)
				none(NotifyCommon[3].Name)
				calls(NotifyCommon[3], false)
				fault.Store(false)
				holder(sub, NotifyCommon[4].Name)
				calls(NotifyCommon[4], false)
				stopSub()
				none(NotifyCommon[5].Name)
				time.Sleep(500 * time.Millisecond) // anything more would come now; observing
				calls(NotifyCommon[5], true)
			})
		})
	}
}

// slowFlagProbe takes d of virtual time, then is flag's result.
type slowFlagProbe struct {
	d    time.Duration
	flag flagProbe
}

func (p slowFlagProbe) Probe(ctx context.Context) error {
	if err := (slowProbe{d: p.d}).Probe(ctx); err != nil {
		return err
	}
	return p.flag.Probe(ctx)
}

// CallLogs reads the sync-group recorder's logs in dir: one file per
// script (its first argument), each in call order.
func CallLogs(t *testing.T, dir string) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "calls-*.log"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, f := range files {
		lines, err := ReadCallLines(f)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "calls-"), ".log")] = lines
	}
	return out
}

// CallRecorder is the body of the sync-group recorder script: it appends
// "call" and its arguments but the first to dir/calls-<first>.log.
func CallRecorder(dir string) string {
	return fmt.Sprintf("who=$1; shift; echo call \"$@\" >> %s/calls-$who.log\n", dir)
}

// SyncGroupConf is VI_1 (VRID 61, 198.18.0.101) and VI_2 (VRID 62,
// 198.18.0.102) at prio, VRRPv3 at 0.1 s, in a vrrp_sync_group G if group
// is set. With rec set, every instance and the group run it as
// notify_master/_backup/_fault/_stop and as the generic notify (first
// argument: who and which); with chk set, VI_2 tracks it with weight 0.
func SyncGroupConf(prio int, group bool, chk, rec string) string {
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

// notifyCalls is what the recorder logs for one transition of an instance
// (or group) who: its specific script and the generic notify.
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

// SyncGroupFirstProbeCase is a case of the sync-group first-probe tests.
type SyncGroupFirstProbeCase struct {
	Name  string
	Group bool
	Stop  bool // stopped during the wait instead of letting it end
	// Silent are the VRIDs the node sends no advert for during the wait;
	// Waiting are the instances (and group) whose notify scripts run none
	// then.
	Silent, Waiting []string
	Calls           map[string][]string // every call, when the node has stopped
}

// SyncGroupFirstProbeCases: VI_1 and VI_2 on a node at 150, VI_2 tracking a
// weight-0 script whose first result the test holds back, beside a node at
// 100 with the same instances that holds both VIPs. With the two in a
// vrrp_sync_group, keepalived 2.2.7 (measured, TestInteropSyncGroupFirstProbe)
// keeps the whole group in INIT while the probe runs: VI_1 too sends no
// advert (none captured from the node), takes no VIP and runs no notify
// script. On the first success VI_2 enters BACKUP, the group syncs VI_1 to
// BACKUP (log: "VRRP_Group(G) Syncing instances to BACKUP state"), and both
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
var SyncGroupFirstProbeCases = []SyncGroupFirstProbeCase{
	{Name: "group, first probe passes", Group: true,
		Silent: []string{"61", "62"}, Waiting: []string{"G", "VI_1", "VI_2"},
		Calls: joinCalls(
			notifyCalls("VI_1", "BACKUP", "150"), notifyCalls("VI_2", "BACKUP", "150"), notifyCalls("G", "BACKUP", "0"),
			notifyCalls("VI_1", "MASTER", "150"), notifyCalls("VI_2", "MASTER", "150"), notifyCalls("G", "MASTER", "0"),
			notifyCalls("VI_1", "STOP", "150"), notifyCalls("VI_2", "STOP", "150"), notifyCalls("G", "STOP", "0"))},
	{Name: "group, stopped during the wait", Group: true, Stop: true,
		Silent: []string{"61", "62"}, Waiting: []string{"G", "VI_1", "VI_2"},
		Calls: joinCalls(notifyCalls("VI_1", "STOP", "150"), notifyCalls("VI_2", "STOP", "150"), notifyCalls("G", "STOP", "0"))},
	{Name: "no group, stopped during the wait", Stop: true,
		Silent: []string{"62"}, Waiting: []string{"VI_2"},
		Calls: joinCalls(notifyCalls("VI_1", "BACKUP", "150"), notifyCalls("VI_1", "MASTER", "150"), notifyCalls("VI_1", "STOP", "150"),
			notifyCalls("VI_2", "STOP", "150"))},
}

// holdProbe says it started, then waits while hold is set (at most 15 s
// of virtual time), then passes: the namespace test's script, in process.
type holdProbe struct{ hold, probing *atomic.Bool }

func (p holdProbe) Probe(ctx context.Context) error {
	p.probing.Store(true)
	for i := 0; p.hold.Load() && i < 150; i++ {
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// TestSyncGroupFirstProbe is TestInteropSyncGroupFirstProbe's vipstack row
// on the simulated segment (SyncGroupFirstProbeCases): the node at 100 an
// engine, the weight-0 script a probe the test holds back, the adverts the
// node sends taken off the segment, SIGTERM the end of Run.
func TestSyncGroupFirstProbe(t *testing.T) {
	for _, tc := range SyncGroupFirstProbeCases {
		t.Run(tc.Name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				seg := &simSegment{}
				sub, peer := seg.node("node1", "198.18.0.1/24"), seg.node("node2", "198.18.0.2/24")
				nodes := []*simNode{sub, peer}
				vips := []netip.Addr{netip.MustParseAddr("198.18.0.101"), netip.MustParseAddr("198.18.0.102")}
				dir := t.TempDir()
				rec := filepath.Join(dir, "rec.sh")
				writeRecorder(t, rec, CallRecorder(dir))
				var hold, probing atomic.Bool
				hold.Store(true)

				pe, _ := simEngine(t, peer, simScriptUser(t, SyncGroupConf(100, tc.Group, "", "")), nil)
				simRun(t, pe)
				for _, v := range vips {
					simWaitSole(t, nodes, v, peer, 300*time.Millisecond, 20*time.Second, "the peer alone")
				}
				var mu sync.Mutex
				var sent []string // VRIDs of the node's adverts
				seg.drop = func(from, _ *simNode, p transport.Packet) bool {
					if from == sub && len(p.Payload) > 1 {
						mu.Lock()
						sent = append(sent, fmt.Sprint(p.Payload[1]))
						mu.Unlock()
					}
					return false
				}
				e, _ := simEngine(t, sub, simScriptUser(t, SyncGroupConf(150, tc.Group, "/etc/keepalived/chk.sh", rec)), nil,
					simProbes(func(*keepalived.Script) track.Check { return holdProbe{hold: &hold, probing: &probing} }))
				stop := simRun(t, e)
				simWaitFor(t, "the first probe started", func() (bool, string) { return probing.Load(), "not yet" })
				// During the wait (checked over 1.5 s, fifteen adverts): the
				// peer keeps each VIP the node cannot take, the node sends
				// no advert for the waiting instances and runs none of
				// their scripts.
				if tc.Group {
					simNeverHolds(t, nodes, vips[0], peer, time.Second, "during the first probe")
				} else {
					simWaitSole(t, nodes, vips[0], sub, 300*time.Millisecond, 10*time.Second, "VI_1, outside any group, during VI_2's first probe")
				}
				simNeverHolds(t, nodes, vips[1], peer, 500*time.Millisecond, "during the first probe")
				mu.Lock()
				if !tc.Group && !slices.Contains(sent, "61") {
					t.Errorf("no advert of VI_1, master outside the group, taken off the segment: %q", sent)
				}
				for _, vrid := range sent {
					if slices.Contains(tc.Silent, vrid) {
						t.Errorf("during the first probe the node advertised for VRID %s", vrid)
					}
				}
				mu.Unlock()
				for who, got := range CallLogs(t, dir) {
					for _, w := range tc.Waiting {
						if strings.HasPrefix(who, w+"_") {
							t.Errorf("during the first probe %s ran: %q", who, got)
						}
					}
				}
				if t.Failed() {
					t.FailNow()
				}
				if !tc.Stop {
					hold.Store(false)
					for _, v := range vips {
						simWaitSole(t, nodes, v, sub, 500*time.Millisecond, 20*time.Second, "after the first probe")
					}
				}
				stop()
				time.Sleep(500 * time.Millisecond) // anything more would come now; observing
				synctest.Wait()
				if diff := cmp.Diff(tc.Calls, CallLogs(t, dir)); diff != "" {
					t.Errorf("notify calls per script (-keepalived's +got):\n%s", diff)
				}
			})
		})
	}
}

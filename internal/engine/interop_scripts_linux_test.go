package engine_test

// Interop tests of scripts: the seeds' check scripts, the first probe, sync groups waiting for it, notify.

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// seedFile returns seed 000's master keepalived.conf (OpenShift 4.8 on
// OpenStack, as found on a running master) for a node of the test network:
// the VIPs moved into 198.18.0.0/24 and each script replaced by a check
// that fails while a file of dir exists; everything else as in the seed.
func seedFile(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "keepalived", "testdata", "seed000_master.conf"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, r := range [][2]string{
		{"/usr/bin/timeout 1.9 /etc/keepalived/chk_ocp_script.sh", "/usr/bin/test ! -e " + filepath.Join(dir, "lb_down")},
		{"/usr/bin/timeout 1.9 /etc/keepalived/chk_ocp_script_both.sh", "/usr/bin/test ! -e " + filepath.Join(dir, "api_down")},
		{"/usr/bin/timeout 0.9 /usr/bin/curl -o /dev/null -Lfs http://localhost:1936/healthz/ready", "/usr/bin/test ! -e " + filepath.Join(dir, "ingress_down")},
		{"10.0.0.5/32", "198.18.0.5/32"},
		{"10.0.0.7/32", "198.18.0.7/32"},
	} {
		if !strings.Contains(text, r[0]) {
			t.Fatalf("seed000_master.conf no longer has %q", r[0])
		}
		text = strings.ReplaceAll(text, r[0], r[1])
	}
	return text
}

// TestInteropSeedScripts runs seed 000's master keepalived.conf on
// two nodes, keepalived on node1 and `vipstack vrrp` on node2, and checks
// the priority arithmetic of its tracked scripts over the wire: managed_API
// is 40 + 20 (chk_ocp_lb, rise 3 fall 2 every 2 s) + 5 (chk_ocp_both),
// managed_INGRESS 20 + 50 (chk_ingress). Equal priorities never preempt,
// whichever address is higher (node2's is), so a VIP moves exactly when a
// node's sum drops below the other's. keepalived's own log gives its
// effective priority at each step ("Changing effective priority from 65 to
// 45", measured); vipstack's must agree with the holders seen.
func TestInteropSeedScripts(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: interopPrefix1})
	api, ingress := netip.MustParseAddr("198.18.0.5"), netip.MustParseAddr("198.18.0.7")
	var nodes []*peers.Node
	var dirs []string
	for i, impl := range []peers.Impl{peers.Keepalived, peers.Vipstack} {
		dir := filepath.Join(t.TempDir(), fmt.Sprint(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		n, err := peers.Start(topo.Hosts[i], impl, seedFile(t, dir), dir, bin)
		if err != nil {
			t.Fatal(err)
		}
		logOnFailure(t, n)
		nodes, dirs = append(nodes, n), append(dirs, dir)
		if i == 0 {
			// keepalived first and alone: it holds both VIPs, at 65 and 70
			// once its checks passed.
			for _, v := range []netip.Addr{api, ingress} {
				if _, err := peers.WaitSoleHolder(topo.Hosts[:1], v, topo.Hosts[0], time.Second, 20*time.Second); err != nil {
					t.Fatalf("keepalived alone: %v", err)
				}
			}
		}
	}
	k, v := nodes[0], nodes[1]
	set := func(node int, name string, down bool) {
		t.Helper()
		p := filepath.Join(dirs[node], name)
		var err error
		if down {
			err = os.WriteFile(p, nil, 0o644)
		} else {
			err = os.Remove(p)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// holds waits until node apiOn alone holds the API VIP and node
	// ingressOn alone the Ingress VIP, both for three adverts in a row.
	holds := func(why string, apiOn, ingressOn int) {
		t.Helper()
		var since time.Time
		var last string
		for start := time.Now(); time.Since(start) < 25*time.Second; time.Sleep(20 * time.Millisecond) { // polling the kernel, bounded
			ok := true
			last = ""
			for _, c := range []struct {
				vip netip.Addr
				on  int
			}{{api, apiOn}, {ingress, ingressOn}} {
				hs, err := peers.Holders(topo.Hosts, c.vip)
				if err != nil {
					t.Fatal(err)
				}
				ok = ok && len(hs) == 1 && hs[0] == topo.Hosts[c.on]
				var names []string
				for _, h := range hs {
					names = append(names, h.Name)
				}
				last += fmt.Sprintf(" %v on %v;", c.vip, names)
			}
			switch {
			case !ok:
				since = time.Time{}
			case since.IsZero():
				since = time.Now()
			case time.Since(since) >= 3*time.Second:
				t.Logf("%s: API VIP on node%d, Ingress VIP on node%d", why, apiOn+1, ingressOn+1)
				return
			}
		}
		t.Fatalf("%s: want the API VIP on node%d only and the Ingress VIP on node%d only; last:%s", why, apiOn+1, ingressOn+1, last)
	}
	// logSays waits for a line matching the regular expression what (the
	// order in which two scripts of one instance first pass or fail is
	// free, so only the final sum is matched).
	logSays := func(n *peers.Node, what, why string) {
		t.Helper()
		re := regexp.MustCompile(what)
		poll(t, 20*time.Second, why, func() (bool, error) { return re.MatchString(n.Log()), nil })
	}

	// vipstack joins at 40 and 20, and is at 65 and 70 once its checks
	// passed (one success is enough at start, as in keepalived): equal,
	// so it takes nothing, for three adverts and more than one check
	// interval.
	logSays(v, `msg="starting VRRP instance" instance=managed_API .*priority=40`, "vipstack's API instance starts at 40")
	logSays(v, `msg="effective priority changed" instance=managed_API from=\d+ to=65`, "vipstack's API instance reaches 65")
	holds("vipstack joined at equal priorities", 0, 0)

	// 1. keepalived's chk_ocp_lb fails: 45 < 65, vipstack takes the API VIP.
	set(0, "lb_down", true)
	logSays(k, `\(managed_API\) Changing effective priority from 65 to 45`, "keepalived's API instance drops to 45")
	holds("keepalived's chk_ocp_lb failing", 1, 0)

	// 2. It passes again (rise 3): 65, equal, the VIP stays.
	set(0, "lb_down", false)
	logSays(k, `\(managed_API\) Changing effective priority from 45 to 65`, "keepalived's API instance back at 65")
	holds("keepalived's chk_ocp_lb passing again", 1, 0)

	// 3. Both of vipstack's API checks fail: 40 < 65, keepalived takes it.
	set(1, "lb_down", true)
	set(1, "api_down", true)
	logSays(v, `msg="effective priority changed" instance=managed_API from=\d+ to=40`, "vipstack's API instance drops to 40")
	holds("vipstack's chk_ocp_lb and chk_ocp_both failing", 0, 0)

	// 4. keepalived's chk_ingress fails: 20 < 70, vipstack takes the
	// Ingress VIP; the API VIP stays.
	set(0, "ingress_down", true)
	logSays(k, `\(managed_INGRESS\) Changing effective priority from 70 to 20`, "keepalived's Ingress instance drops to 20")
	holds("keepalived's chk_ingress failing", 0, 1)
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

// TestInteropSyncGroupFirstProbe: VI_1 and VI_2 on a node at 150,
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
func TestInteropSyncGroupFirstProbe(t *testing.T) {
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
				topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: interopPrefix3})
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

// TestInteropNotify runs one instance with every notify script
// (notify_master, notify_backup, notify_fault, notify_stop and the generic
// notify, which ipfailover renders) under keepalived and under vipstack,
// through the same transitions, and compares the calls each made: which
// scripts, with which arguments, in which order, and on shutdown. The
// instance (priority 100, VRRPv3 0.1 s) tracks a weight-0 script that
// takes 0.3 s; a keepalived peer at 200 comes and goes. The recorder
// appends the arguments it got to one log for the specific scripts (their
// own name, from the configuration, as first argument) and one for the
// generic notify, each in call order (the specific script and notify of
// one transition are started together, so their relative order is free).
//
// keepalived 2.2.7's calls, measured with this test (keepalived row):
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
func TestInteropNotify(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	type step struct {
		name             string
		specific, notify []string // added by this step
	}
	common := []step{
		{name: "alone: master down", specific: []string{"master"}, notify: []string{"INSTANCE VI_1 MASTER 100"}},
		{name: "a peer at 200 preempts", specific: []string{"backup"}, notify: []string{"INSTANCE VI_1 BACKUP 100"}},
		{name: "the peer stops", specific: []string{"master"}, notify: []string{"INSTANCE VI_1 MASTER 100"}},
		{name: "the script fails", specific: []string{"fault"}, notify: []string{"INSTANCE VI_1 FAULT 100"}},
		{name: "the script passes again", specific: []string{"backup", "master"}, notify: []string{"INSTANCE VI_1 BACKUP 100", "INSTANCE VI_1 MASTER 100"}},
		{name: "SIGTERM as master", specific: []string{"stop"}, notify: []string{"INSTANCE VI_1 STOP 100"}},
	}
	for _, tc := range []struct {
		name      string
		failFirst bool // the script fails at start until the test lets it pass
		start     []step
	}{
		{name: "first probe passes",
			start: []step{{name: "start", specific: []string{"backup"}, notify: []string{"INSTANCE VI_1 BACKUP 100"}}}},
		{name: "first probe fails", failFirst: true,
			start: []step{
				{name: "start", specific: []string{"fault"}, notify: []string{"INSTANCE VI_1 FAULT 100"}},
				{name: "the script passes", specific: []string{"backup"}, notify: []string{"INSTANCE VI_1 BACKUP 100"}}}},
	} {
		for _, impl := range []peers.Impl{peers.Keepalived, peers.Vipstack} {
			t.Run(tc.name+"/"+string(impl), func(t *testing.T) {
				t.Parallel()
				topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: interopPrefix2})
				subH, peerH := topo.Hosts[0], topo.Hosts[1]
				vip := netip.MustParseAddr("198.18.0.100")
				dir := t.TempDir() // root-owned, under sticky /tmp: passes enable_script_security
				specLog, anyLog := filepath.Join(dir, "specific.log"), filepath.Join(dir, "notify.log")
				rec, chk, flag := filepath.Join(dir, "rec.sh"), filepath.Join(dir, "chk.sh"), filepath.Join(dir, "fault")
				writeScript(t, rec, fmt.Sprintf("if [ \"$1\" = notify ]; then shift; echo \"$@\" >> %s; else echo \"$@\" >> %s; fi\n", anyLog, specLog))
				writeScript(t, chk, fmt.Sprintf("sleep 0.3\ntest ! -e %s\n", flag))
				setFlag := func(on bool) {
					t.Helper()
					var err error
					if on {
						err = os.WriteFile(flag, nil, 0o644)
					} else {
						err = os.Remove(flag)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				if tc.failFirst {
					setFlag(true)
				}
				conf := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 51, Priority: 100, VIP: netip.PrefixFrom(vip, 32),
					Script: chk, Weight: 0, Notify: rec + " notify"}
				holder := func(h *testnet.Host, why string) {
					t.Helper()
					if _, err := peers.WaitSoleHolder(topo.Hosts, vip, h, 500*time.Millisecond, 20*time.Second); err != nil {
						t.Fatalf("%s: %v", why, err)
					}
				}
				none := func(why string) {
					t.Helper()
					poll(t, 20*time.Second, why, func() (bool, error) {
						hs, err := peers.Holders(topo.Hosts, vip)
						return len(hs) == 0, err
					})
				}
				var wantSpec, wantAny []string
				// calls waits until both logs hold as many calls as
				// keepalived made by the end of st, and compares them
				// (the next step's may have started: the last step
				// compares whole logs).
				calls := func(st step, last bool) {
					t.Helper()
					wantSpec, wantAny = append(wantSpec, st.specific...), append(wantAny, st.notify...)
					var gotSpec, gotAny []string
					poll(t, 5*time.Second, st.name+": the notify scripts ran", func() (bool, error) {
						var err1, err2 error
						gotSpec, err1 = readLines(specLog)
						gotAny, err2 = readLines(anyLog)
						if os.IsNotExist(err1) || os.IsNotExist(err2) {
							return false, nil
						}
						return len(gotSpec) >= len(wantSpec) && len(gotAny) >= len(wantAny), errors.Join(err1, err2)
					})
					if !last {
						gotSpec, gotAny = gotSpec[:len(wantSpec)], gotAny[:len(wantAny)]
					}
					if diff := cmp.Diff(wantSpec, gotSpec); diff != "" {
						t.Errorf("%s: notify_* calls (-keepalived's +got):\n%s", st.name, diff)
					}
					if diff := cmp.Diff(wantAny, gotAny); diff != "" {
						t.Errorf("%s: notify calls (-keepalived's +got):\n%s", st.name, diff)
					}
					if t.Failed() {
						t.FailNow()
					}
				}

				sub := startText(t, subH, impl, withLines(t, conf, subH,
					fmt.Sprintf("notify_master %q", rec+" master"),
					fmt.Sprintf("notify_backup %q", rec+" backup"),
					fmt.Sprintf("notify_fault %q", rec+" fault"),
					fmt.Sprintf("notify_stop %q", rec+" stop")))
				for i, st := range tc.start {
					if i > 0 {
						setFlag(false)
					}
					calls(st, false)
				}
				holder(subH, common[0].name)
				calls(common[0], false)

				peerConf := conf
				peerConf.Priority, peerConf.Script, peerConf.Notify = 200, "", ""
				peer := startText(t, peerH, peers.Keepalived, withLines(t, peerConf, peerH))
				holder(peerH, common[1].name)
				calls(common[1], false)
				if err := peer.Term(); err != nil {
					t.Fatal(err)
				}
				holder(subH, common[2].name)
				calls(common[2], false)
				setFlag(true)
				none(common[3].name)
				calls(common[3], false)
				setFlag(false)
				holder(subH, common[4].name)
				calls(common[4], false)
				if err := sub.Term(); err != nil {
					t.Fatal(err)
				}
				none(common[5].name)
				time.Sleep(500 * time.Millisecond) // anything more would come now that the node exited; observing
				calls(common[5], true)
			})
		}
	}
}

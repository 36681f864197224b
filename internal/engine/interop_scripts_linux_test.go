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

	"github.com/vipstack/vipstack/internal/engine"
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

// TestInteropSyncGroupFirstProbe: keepalived 2.2.7 makes, in the cases of
// engine.SyncGroupFirstProbeCases (notify_test.go, where they are
// described), the calls those list, sends no advert for the waiting
// instances and takes no VIP while its first probe runs, beside a
// keepalived node at 100; those cases were measured with this test. The
// engine's row, the same cases on the simulated segment, is
// TestSyncGroupFirstProbe; this test keeps them keepalived's.
func TestInteropSyncGroupFirstProbe(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	for _, tc := range engine.SyncGroupFirstProbeCases {
		t.Run(tc.Name+"/keepalived", func(t *testing.T) {
			t.Parallel()
			topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: interopPrefix3})
			subH, peerH := topo.Hosts[0], topo.Hosts[1]
			vips := []netip.Addr{netip.MustParseAddr("198.18.0.101"), netip.MustParseAddr("198.18.0.102")}
			dir := t.TempDir() // root-owned, under sticky /tmp: passes enable_script_security
			rec, chk := filepath.Join(dir, "rec.sh"), filepath.Join(dir, "chk.sh")
			hold, probing := filepath.Join(dir, "hold"), filepath.Join(dir, "probing")
			writeScript(t, rec, engine.CallRecorder(dir))
			// Every probe says it started, then waits while the hold
			// file exists (at most 15 s), then passes. keepalived 2.2.7
			// starts a second probe while the first one runs (logging
			// "Track script chk is already running, expect idle -
			// skipping run"), so each must wait.
			writeScript(t, chk, fmt.Sprintf("touch %[2]s\ni=0\nwhile [ -e %[1]s ] && [ $i -lt 150 ]; do sleep 0.1; i=$((i+1)); done\nexit 0\n", hold, probing))
			if err := os.WriteFile(hold, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			startText(t, peerH, peers.Keepalived, engine.SyncGroupConf(100, tc.Group, "", ""))
			for _, v := range vips {
				if _, err := peers.WaitSoleHolder(topo.Hosts, v, peerH, 300*time.Millisecond, 20*time.Second); err != nil {
					t.Fatalf("the keepalived peer alone: %v", err)
				}
			}
			capt := captureVRRP(t, peerH, "src "+subH.IPv4.Addr().String())
			sub := startText(t, subH, peers.Keepalived, engine.SyncGroupConf(150, tc.Group, chk, rec))
			poll(t, 10*time.Second, "the first probe started", func() (bool, error) {
				_, err := os.Stat(probing)
				return err == nil, nil
			})
			// During the wait (checked over 1.5 s, fifteen adverts): the
			// peer keeps each VIP the node cannot take, the node sends
			// no advert for the waiting instances and runs none of
			// their scripts.
			if tc.Group {
				neverHolds(t, topo.Hosts, vips[0], peerH, time.Second, "during the first probe")
			} else if _, err := peers.WaitSoleHolder(topo.Hosts, vips[0], subH, 300*time.Millisecond, 10*time.Second); err != nil {
				t.Fatalf("VI_1, outside any group, during VI_2's first probe: %v", err)
			}
			neverHolds(t, topo.Hosts, vips[1], peerH, 500*time.Millisecond, "during the first probe")
			for _, l := range capt.Lines() {
				for _, v := range tc.Silent {
					if strings.Contains(l, " vrid "+v+" ") {
						t.Errorf("during the first probe the node advertised: %s", l)
					}
				}
			}
			for who, got := range engine.CallLogs(t, dir) {
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
			if diff := cmp.Diff(tc.Calls, engine.CallLogs(t, dir)); diff != "" {
				t.Errorf("notify calls per script (-table +keepalived's):\n%s", diff)
			}
		})
	}
}

// TestInteropNotify: keepalived 2.2.7 makes the notify calls of
// engine.NotifyCommon and engine.NotifyCases (notify_test.go) through
// their steps, with the same configuration, script and peer; those tables
// were measured with this test. The engine's row, the same table on the
// simulated segment, is TestNotify; this test keeps the table keepalived's.
func TestInteropNotify(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	for _, tc := range engine.NotifyCases {
		t.Run(tc.Name+"/keepalived", func(t *testing.T) {
			t.Parallel()
			topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: interopPrefix2})
			subH, peerH := topo.Hosts[0], topo.Hosts[1]
			vip := netip.MustParseAddr("198.18.0.100")
			dir := t.TempDir() // root-owned, under sticky /tmp: passes enable_script_security
			specLog, anyLog := filepath.Join(dir, "specific.log"), filepath.Join(dir, "notify.log")
			rec, chk, flag := filepath.Join(dir, "rec.sh"), filepath.Join(dir, "chk.sh"), filepath.Join(dir, "fault")
			writeScript(t, rec, engine.NotifyRecorder(specLog, anyLog))
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
			if tc.FailFirst {
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
			// calls waits until both logs hold as many calls as the
			// table lists by the end of st, and compares them (the next
			// step's may have started: the last step compares whole
			// logs).
			calls := func(st engine.NotifyStep, last bool) {
				t.Helper()
				wantSpec, wantAny = append(wantSpec, st.Specific...), append(wantAny, st.Notify...)
				var gotSpec, gotAny []string
				poll(t, 5*time.Second, st.Name+": the notify scripts ran", func() (bool, error) {
					var err1, err2 error
					gotSpec, err1 = readLines(specLog)
					gotAny, err2 = readLines(anyLog)
					return len(gotSpec) >= len(wantSpec) && len(gotAny) >= len(wantAny), errors.Join(err1, err2)
				})
				if !last {
					gotSpec, gotAny = gotSpec[:len(wantSpec)], gotAny[:len(wantAny)]
				}
				if diff := cmp.Diff(wantSpec, gotSpec); diff != "" {
					t.Errorf("%s: notify_* calls (-table +keepalived's):\n%s", st.Name, diff)
				}
				if diff := cmp.Diff(wantAny, gotAny); diff != "" {
					t.Errorf("%s: notify calls (-table +keepalived's):\n%s", st.Name, diff)
				}
				if t.Failed() {
					t.FailNow()
				}
			}

			common := engine.NotifyCommon
			sub := startText(t, subH, peers.Keepalived, withLines(t, conf, subH, engine.NotifyLines(rec)...))
			for i, st := range tc.Start {
				if i > 0 {
					setFlag(false)
				}
				calls(st, false)
			}
			holder(subH, common[0].Name)
			calls(common[0], false)

			peerConf := conf
			peerConf.Priority, peerConf.Script, peerConf.Notify = 200, "", ""
			peer := startText(t, peerH, peers.Keepalived, withLines(t, peerConf, peerH))
			holder(peerH, common[1].Name)
			calls(common[1], false)
			if err := peer.Term(); err != nil {
				t.Fatal(err)
			}
			holder(subH, common[2].Name)
			calls(common[2], false)
			setFlag(true)
			none(common[3].Name)
			calls(common[3], false)
			setFlag(false)
			holder(subH, common[4].Name)
			calls(common[4], false)
			if err := sub.Term(); err != nil {
				t.Fatal(err)
			}
			none(common[5].Name)
			time.Sleep(500 * time.Millisecond) // anything more would come now that the node exited; observing
			calls(common[5], true)
		})
	}
}

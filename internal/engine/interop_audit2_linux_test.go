package engine_test

// The second part of the interop audit (see the table at the top of
// interop_audit_linux_test.go): preempt_delay, notify scripts and a /16
// virtual_ipaddress, each run with vipstack and a real keepalived 2.2.7, and
// each with a row of keepalived alone that records what keepalived does
// (the reference the vipstack rows must match).

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// audit2Prefix starts the namespace names of the tests in this file.
const audit2Prefix = "vsmm"

// withLines renders c for host h with lines added at the end of its
// vrrp_instance block (directives peers.Conf has no field for).
func withLines(t *testing.T, c peers.Conf, h *testnet.Host, lines ...string) string {
	t.Helper()
	text, err := c.Render(h.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) == 0 {
		return text
	}
	i := strings.LastIndex(text, "}")
	return text[:i] + "    " + strings.Join(lines, "\n    ") + "\n" + text[i:]
}

// startText runs impl on h with the keepalived.conf text and prints its
// log if the test fails.
func startText(t *testing.T, h *testnet.Host, impl peers.Impl, text string) *peers.Node {
	t.Helper()
	n, err := peers.Start(h, impl, text, filepath.Join(t.TempDir(), h.Name), vipstackBin(t))
	if err != nil {
		t.Fatal(err)
	}
	logOnFailure(t, n)
	return n
}

// neverHolds samples, every 10 ms for d, that host h does not hold vip
// while host other does, alone (a check point inside a timer, not a wait for
// one).
func neverHolds(t *testing.T, hs []*testnet.Host, vip netip.Addr, other *testnet.Host, d time.Duration, why string) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) { // sampling the kernel
		got, err := peers.Holders(hs, vip)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] != other {
			var names []string
			for _, g := range got {
				names = append(names, g.Name)
			}
			t.Fatalf("%s: %v is held by %v, want only %s", why, vip, names, other.Name)
		}
	}
	t.Logf("%s: only %s held %v for %v", why, other.Name, vip, d)
}

// TestInteropAuditPreemptDelay: preempt_delay (ipfailover renders
// `preempt_delay 300`) holds a higher-priority node back from preempting a
// lower master for the delay after it starts, then it preempts. With one
// group of a lower master (priority 100), a node coming back at 150 with
// preempt_delay 5 and, for the second case, a third node at 200 without a
// delay. Measured with keepalived on every node (the keepalived row, VRRPv3
// at 0.1 s), and required of vipstack in either role:
//
//	event                                   keepalived 2.2.7 (measured)
//	150 starts, lower master at 100         stays BACKUP through the delay
//	                                        (sampled to 2.5 s of 5), MASTER
//	                                        after it (5.3 s, log:
//	                                        "Entering MASTER STATE")
//	200 starts during 150's delay           200 preempts at once; 150 stays
//	                                        BACKUP (a higher master)
//	200 stops (priority 0) during the delay 150 becomes MASTER after its
//	                                        skew time, delay or not: a
//	                                        master leaving is no preemption
//
// A vipstack that ignored the delay takes the VIP within a skew time of
// starting; one that counted it from a wrong origin, or applied it to a
// master leaving, fails the check points.
func TestInteropAuditPreemptDelay(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	const delay = 5 * time.Second
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
			topo := testnet.New(t, testnet.Options{Hosts: 3, Prefix: audit2Prefix})
			lowH, delH, highH := topo.Hosts[0], topo.Hosts[1], topo.Hosts[2]
			vip := netip.MustParseAddr("198.18.0.100")
			conf := func(prio int) peers.Conf {
				return peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 51, Priority: prio, VIP: netip.PrefixFrom(vip, 32)}
			}
			delayLine := fmt.Sprintf("preempt_delay %d", int(delay.Seconds()))
			startText(t, lowH, tc.lower, withLines(t, conf(100), lowH, delayLine))
			if _, err := peers.WaitSoleHolder(topo.Hosts, vip, lowH, 500*time.Millisecond, 20*time.Second); err != nil {
				t.Fatalf("the lower node alone: %v", err)
			}

			// 1. The higher node comes back with preempt_delay.
			delText := withLines(t, conf(150), delH, delayLine)
			del := startText(t, delH, tc.delayed, delText)
			neverHolds(t, topo.Hosts, vip, lowH, delay/2, "150 within its preempt_delay")
			d, err := peers.WaitSoleHolder(topo.Hosts, vip, delH, 500*time.Millisecond, 20*time.Second)
			if err != nil {
				t.Fatalf("150 after its preempt_delay: %v", err)
			}
			t.Logf("150 took the VIP %v after it started", d.Round(100*time.Millisecond))

			// 2. It comes back again, and a higher master appears and
			// leaves during its delay.
			if err := del.Term(); err != nil {
				t.Fatal(err)
			}
			if _, err := peers.WaitSoleHolder(topo.Hosts, vip, lowH, 500*time.Millisecond, 20*time.Second); err != nil {
				t.Fatalf("150 stopped: %v", err)
			}
			startText(t, delH, tc.delayed, delText)
			restarted := time.Now()
			high := startText(t, highH, tc.highest, withLines(t, conf(200), highH))
			if _, err := peers.WaitSoleHolder(topo.Hosts, vip, highH, 500*time.Millisecond, 3*time.Second); err != nil {
				t.Fatalf("200 preempts at once: %v", err)
			}
			if err := high.Term(); err != nil {
				t.Fatal(err)
			}
			stopped := time.Now()
			// The check point: 150 holds the VIP before its delay (counted
			// from its restart) is over.
			d, err = peers.WaitSoleHolder(topo.Hosts, vip, delH, 0, time.Until(restarted.Add(delay-500*time.Millisecond)))
			if err != nil {
				t.Fatalf("200 stopped during 150's preempt_delay, 150 must take over without waiting for it: %v", err)
			}
			t.Logf("200 stopped %v after 150 restarted; 150 took the VIP %v later", stopped.Sub(restarted).Round(100*time.Millisecond), d.Round(10*time.Millisecond))
			if _, err := peers.WaitSoleHolder(topo.Hosts, vip, delH, 500*time.Millisecond, 5*time.Second); err != nil {
				t.Fatalf("150 after 200 stopped: %v", err)
			}
		})
	}
}

// TestInteropAuditNotify runs one instance with every notify script
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
func TestInteropAuditNotify(t *testing.T) {
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
				topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: audit2Prefix})
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

// vipState is what the kernel shows for a VIP on a host: its address
// entry (`ip -j addr`, the fields an implementation chooses) and the routes
// of table main and local that name it (`ip -j route`).
type vipState struct {
	Addr   map[string]any
	Routes []string
}

func vipOn(t *testing.T, h *testnet.Host, vip netip.Addr) vipState {
	t.Helper()
	out, err := h.Run("ip", "-j", "addr", "show", "dev", h.Link)
	if err != nil {
		t.Fatal(err)
	}
	var links []struct {
		AddrInfo []map[string]any `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil {
		t.Fatalf("ip -j addr: %v: %s", err, out)
	}
	var st vipState
	for _, l := range links {
		for _, a := range l.AddrInfo {
			if a["local"] == vip.String() {
				st.Addr = map[string]any{}
				for k, v := range a {
					switch k {
					case "valid_life_time", "preferred_life_time":
					default:
						st.Addr[k] = v
					}
				}
			}
		}
	}
	for _, table := range []string{"main", "local"} {
		out, err := h.Run("ip", "-j", "route", "show", "table", table)
		if err != nil {
			t.Fatal(err)
		}
		var routes []map[string]any
		if err := json.Unmarshal([]byte(out), &routes); err != nil {
			t.Fatalf("ip -j route: %v: %s", err, out)
		}
		for _, r := range routes {
			if r["prefsrc"] == vip.String() || r["dst"] == vip.String() {
				delete(r, "flags")
				b, _ := json.Marshal(r)
				st.Routes = append(st.Routes, table+" "+string(b))
			}
		}
	}
	return st
}

// TestInteropAuditSlash16: a /16 virtual_ipaddress, as seed 001 writes
// its VIPs (10.0.0.5/16 on a node of machine network 10.0.0.0/16, where
// `ip a` shows "inet 10.0.0.5/16 scope global secondary ens3"), installed
// by keepalived and by vipstack in one group: the same address entry and
// the same routes, and none of either left on a node that lost the VIP.
// keepalived 2.2.7 installs (measured, `ip -j addr` and `ip -j route`):
//
//	case              address                        routes
//	inside 198.19/16  198.19.0.5/16 scope global     local 198.19.0.5 (src the
//	                  secondary, label eth0           node's own address); no
//	                                                  connected route added
//	own prefix        198.18.5.5/16 scope global,    main 198.18.0.0/16 proto
//	                  label eth0, not secondary       kernel scope link src VIP;
//	                                                  local VIP; broadcast
//	                                                  198.18.255.255
//
// and removes the address and every one of those routes when it stops or
// loses the VIP (seen here after SIGTERM).
func TestInteropAuditSlash16(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	for _, tc := range []struct {
		name    string
		machine string // an address each host gets besides testnet's (%d: the host's index)
		vip     netip.Prefix
	}{
		// Seed 001: the node's own address is in the VIP's /16.
		{name: "inside the machine network", machine: "198.19.0.%d/16", vip: netip.MustParsePrefix("198.19.0.5/16")},
		// No address of the node in the /16: the VIP is its first.
		{name: "own prefix", vip: netip.MustParsePrefix("198.18.5.5/16")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: audit2Prefix})
			kH, vH := topo.Hosts[0], topo.Hosts[1]
			for _, h := range topo.Hosts {
				if tc.machine != "" {
					if _, err := h.Run("ip", "addr", "add", fmt.Sprintf(tc.machine, 10+h.Index), "dev", h.Link); err != nil {
						t.Fatal(err)
					}
				}
			}
			vip := tc.vip.Addr()
			conf := func(prio int) peers.Conf {
				return peers.Conf{Version: 2, Interval: time.Second, VRID: 29, Priority: prio, VIP: tc.vip, Auth: "ocp4_api_vip"}
			}
			// own replaces the host's addresses in st, so that two hosts'
			// states compare.
			own := func(h *testnet.Host, st vipState) vipState {
				mine := []string{h.IPv4.Addr().String()}
				if tc.machine != "" {
					mine = append(mine, strings.TrimSuffix(fmt.Sprintf(tc.machine, 10+h.Index), "/16"))
				}
				out := vipState{Addr: st.Addr}
				for _, r := range st.Routes {
					for _, a := range mine {
						r = strings.ReplaceAll(r, `"`+a+`"`, `"HOST"`)
					}
					out.Routes = append(out.Routes, r)
				}
				return out
			}
			sole := func(h *testnet.Host, why string) {
				t.Helper()
				if _, err := peers.WaitSoleHolder(topo.Hosts, vip, h, time.Second, 20*time.Second); err != nil {
					t.Fatalf("%s: %v", why, err)
				}
			}
			// gone checks that h has neither the address nor a route of it.
			gone := func(h *testnet.Host, why string) {
				t.Helper()
				if st := vipOn(t, h, vip); st.Addr != nil || st.Routes != nil {
					t.Errorf("%s: %s still has %+v", why, h.Name, st)
				}
			}
			kText := withLines(t, conf(150), kH)
			k := startText(t, kH, peers.Keepalived, kText)
			sole(kH, "keepalived alone")
			want := own(kH, vipOn(t, kH, vip))
			t.Logf("keepalived as master installs %+v", want)
			if want.Addr["prefixlen"] != float64(16) {
				t.Fatalf("keepalived installed %+v, not a /16", want.Addr)
			}
			v := startText(t, vH, peers.Vipstack, withLines(t, conf(100), vH))
			if err := k.Term(); err != nil {
				t.Fatal(err)
			}
			sole(vH, "keepalived stopped")
			gone(kH, "keepalived stopped") // what keepalived leaves: nothing
			if diff := cmp.Diff(want, own(vH, vipOn(t, vH, vip))); diff != "" {
				t.Errorf("vipstack as master (-keepalived's +vipstack's):\n%s", diff)
			}
			startText(t, kH, peers.Keepalived, kText)
			sole(kH, "keepalived back at 150 preempts vipstack")
			gone(vH, "vipstack preempted")
			if diff := cmp.Diff(want, own(kH, vipOn(t, kH, vip))); diff != "" {
				t.Errorf("keepalived as master again (-first +now):\n%s", diff)
			}
			if err := v.Term(); err != nil {
				t.Fatal(err)
			}
			gone(vH, "vipstack stopped as backup")
		})
	}
}

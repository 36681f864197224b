package ipfailover_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestPoolWithKeepalived: one node of the pool runs real keepalived 2.2.7
// with the keepalived.conf ipfailover renders for it (`vipstack ipfailover
// --print-config`, what OpenShift's image would run for the same plan),
// the other `vipstack ipfailover`, with the same OPENSHIFT_HA_* environment
// (seed 002's variables). Each holds the groups it prefers; when the check
// of one fails, its VIPs go to the other, and come back when it passes
// again (PREEMPTION preempt), in both directions: keepalived's check
// failing and vipstack's. Two checks: MONITOR_PORT (rendered as the
// image's `bash -c '</dev/tcp/ADDR/PORT'`, weight 0; vipstack connects
// natively), and CHECK_SCRIPT with NOTIFY_SCRIPT, where each node's notify
// calls must say what it did: per group, the last call names the state the
// node is in, as keepalived's generic notify writes it.
//
// keepalived runs the rendered file as it is (measured: "Script
// `chk_vsmmka` now returning 1", "VRRP_Script(chk_vsmmka) failed (exited
// with status 1)", "Entering FAULT STATE"; on the group the other node
// prefers, "received lower priority (230) advert from 198.18.0.12 -
// discarding"; and, as the file has no script_user, "Script user
// 'keepalived_script' does not exist" and "SECURITY VIOLATION - scripts
// are being executed but script_security not enabled", running the checks
// as root).
func TestPoolWithKeepalived(t *testing.T) {
	testnet.RequireRoot(t)
	if _, err := os.Stat("/usr/sbin/keepalived"); err != nil {
		t.Skip("keepalived is not installed")
	}
	bin := vipstackBin(t)
	for _, tc := range []struct {
		name   string
		script bool // CHECK_SCRIPT and NOTIFY_SCRIPT instead of the port
	}{
		{name: "monitor port"},
		{name: "check and notify scripts", script: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vsmm"})
			kH, vH := topo.Hosts[0], topo.Hosts[1]
			const vipList = "198.18.0.100-103"
			vips := mustExpand(t, vipList)
			env := []string{
				"OPENSHIFT_HA_CONFIG_NAME=vsmmka",
				"OPENSHIFT_HA_VIRTUAL_IPS=" + vipList,
				"OPENSHIFT_HA_REPLICA_COUNT=2",
				"OPENSHIFT_HA_NETWORK_INTERFACE=eth0",
				fmt.Sprintf("OPENSHIFT_HA_MONITOR_PORT=%d", monitorPort),
				"OPENSHIFT_HA_CHECK_INTERVAL=1",
				"OPENSHIFT_HA_PREEMPTION=preempt",
			}
			// VRRPv3 at 0.1 s in both: the flags render into keepalived's file.
			flags := []string{"--vrrp-version", "3", "--advert-int", "100ms", "--vrid-probe", "300ms"}
			dir := t.TempDir()
			// me prints the node's own address (the first one of its
			// namespace): the scripts are shared, the nodes are not.
			const me = "$(hostname -I | cut -d' ' -f1)"
			var setCheck func(i int, pass bool)
			if tc.script {
				chk, notify := filepath.Join(dir, "check.sh"), filepath.Join(dir, "notify.sh")
				if err := os.WriteFile(chk, fmt.Appendf(nil, "#!/bin/sh\ntest ! -e %s/down-%s\n", dir, me), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(notify, fmt.Appendf(nil, "#!/bin/sh\necho \"$@\" >> %s/notify-%s\n", dir, me), 0o755); err != nil {
					t.Fatal(err)
				}
				env = append(env, "OPENSHIFT_HA_CHECK_SCRIPT="+chk, "OPENSHIFT_HA_NOTIFY_SCRIPT="+notify)
				setCheck = func(i int, pass bool) {
					t.Helper()
					flag := filepath.Join(dir, "down-"+topo.Hosts[i].IPv4.Addr().String())
					var err error
					if pass {
						err = os.Remove(flag)
					} else {
						err = os.WriteFile(flag, nil, 0o644)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
			} else {
				ports := []net.Listener{listen(t, kH, monitorPort), listen(t, vH, monitorPort)}
				setCheck = func(i int, pass bool) {
					if pass {
						ports[i] = listen(t, topo.Hosts[i], monitorPort)
					} else {
						ports[i].Close()
					}
				}
			}

			// keepalived's node: the configuration ipfailover renders for it.
			text := renderedConfig(t, kH, bin, env, flags)
			check := "</dev/tcp/" + kH.IPv4.Addr().String() + "/8080"
			if tc.script {
				check = "check.sh"
			}
			if !strings.Contains(text, check) {
				t.Fatalf("the rendered configuration does not run %s:\n%s", check, text)
			}
			k := startRenderedKeepalived(t, kH, bin, text, filepath.Join(dir, "keepalived"))
			startNode(t, vH, env, flags...)

			// The plan puts VIPs round robin into 2 groups, VIP_1
			// (.100, .102) and VIP_2 (.101, .103).
			groupOf := func(i int) string { return fmt.Sprintf("vsmmka_VIP_%d", i%2+1) }
			line := regexp.MustCompile(`^INSTANCE (vsmmka_VIP_[12]) (MASTER|BACKUP|FAULT) (\d+)$`)
			// notified checks that each node's last notify call per group
			// names the state it is in: FAULT while its check fails,
			// MASTER for the groups it holds, BACKUP for the others.
			notified := func(why string, failing []bool) {
				t.Helper()
				var last []string
				matches := func() (bool, error) {
					hold, err := holdings(topo.Hosts, vips)
					if err != nil {
						return false, err
					}
					last = nil
					ok := true
					for i, h := range topo.Hosts {
						b, err := os.ReadFile(filepath.Join(dir, "notify-"+h.IPv4.Addr().String()))
						if err != nil && !os.IsNotExist(err) {
							return false, err
						}
						got := map[string]string{}
						for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
							m := line.FindStringSubmatch(l)
							if m == nil {
								if l != "" {
									t.Fatalf("%s's notify got %q, want keepalived's INSTANCE NAME STATE PRIORITY", h.Name, l)
								}
								continue
							}
							got[m[1]] = m[2]
						}
						for j, v := range vips {
							want := "BACKUP"
							switch {
							case failing[i]:
								want = "FAULT"
							case hold[i][v]:
								want = "MASTER"
							}
							if got[groupOf(j)] != want {
								ok = false
							}
							if j < 2 { // one line per group
								last = append(last, fmt.Sprintf("%s %s: %s (want %s)", h.Name, groupOf(j), got[groupOf(j)], want))
							}
						}
					}
					return ok, nil
				}
				for start := time.Now(); ; time.Sleep(50 * time.Millisecond) { // polling the scripts' logs, bounded
					ok, err := matches()
					if err != nil {
						t.Fatal(err)
					}
					if ok {
						break
					}
					if time.Since(start) > 10*time.Second {
						t.Fatalf("%s: the last notify call per group does not name the node's state: %v", why, last)
					}
				}
				t.Logf("%s: %v", why, last)
			}
			step := func(why string, kHolds, vHolds int, failing ...bool) {
				t.Helper()
				waitSpread(t, why, topo.Hosts, vips, time.Second, 20*time.Second,
					func(s spread) bool { return once(s) && slices.Equal(s.counts, []int{kHolds, vHolds}) })
				if tc.script {
					notified(why, failing)
				}
			}
			step("start: each node holds the groups it prefers", 2, 2, false, false)
			setCheck(0, false)
			step("keepalived's check fails: vipstack holds every VIP", 0, 4, true, false)
			setCheck(0, true)
			step("keepalived's check passes again: it takes its groups back", 2, 2, false, false)
			setCheck(1, false)
			step("vipstack's check fails: keepalived holds every VIP", 4, 0, false, true)
			setCheck(1, true)
			step("vipstack's check passes again: it takes its groups back", 2, 2, false, false)
			if !strings.Contains(k.Log(), "Entering FAULT STATE") {
				t.Errorf("keepalived never went FAULT on its failing check")
			}
		})
	}
}

// renderedConfig is the keepalived.conf `vipstack ipfailover --print-config`
// renders on h for env (OPENSHIFT_HA_* variables) and flags.
func renderedConfig(t *testing.T, h *testnet.Host, bin string, env, flags []string) string {
	t.Helper()
	pc := h.Command(bin, append([]string{"ipfailover", "--print-config"}, flags...)...)
	pc.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	out, err := pc.Output()
	if err != nil {
		t.Fatalf("vipstack ipfailover --print-config: %v", err)
	}
	return string(out)
}

// startRenderedKeepalived runs keepalived on h with the configuration text
// in dir for the rest of the test; a failed test shows the text and the
// end of keepalived's log.
func startRenderedKeepalived(t *testing.T, h *testnet.Host, bin, text, dir string) *peers.Node {
	t.Helper()
	k, err := peers.Start(h, peers.Keepalived, text, dir, bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- rendered keepalived.conf:\n%s\n---- keepalived log:\n%s", text, tail(k.Log(), 60))
		}
	})
	return k
}

package engine_test

// Interop coverage: every keepalived directive the seeds' configurations use
// (OpenShift's on-premise keepalived static pods, /work/shared/seeds 000
// and 001; ipfailover, 002; keepalived-operator, 004) and the test that runs
// it with vipstack and a real keepalived 2.2.7 in one VRRP group.
//
//	directive (seed)                          against real keepalived
//	global_defs enable_script_security,       TestInteropTrackScript, TestSyncGroup
//	  script_user root (000)
//	vrrp_script script/interval/weight        TestInteropTrackScript (weight -60, interval 1,
//	  /rise/fall (000: weight +20 and +5,       fall 1 rise 1); node TestStoryMixedCluster
//	  interval 2, rise 3, fall 2; +50)          (rendered chk_ocp_lb/chk_ocp_both/chk_ingress,
//	                                            vipstack side native checks);
//	                                            TestInteropSeedScripts (the seed's file
//	                                            itself on both sides)
//	track_script, two scripts summed (000)    TestInteropSeedScripts; TestStoryMixedCluster
//	vrrp_script before its first result       TestFirstProbe (simulated, an engine as the
//	  (keepalived's INIT state)                 master: weight +30 and 0);
//	                                            TestInteropSyncGroupFirstProbe (a sync
//	                                            group waits whole; SIGTERM during the wait)
//	state BACKUP (000, 001)                   every interop test
//	state MASTER (ipfailover)                 TestStateMasterWaits (simulated, an engine
//	                                            as the higher master)
//	interface, virtual_router_id              every interop test
//	priority (equal priorities, 000)          TestInteropEqualPriority (address tie-break
//	                                            after a partition, v2/v3, IPv4/IPv6,
//	                                            multicast/unicast); TestStoryMixedCluster
//	                                            (equal priority does not preempt)
//	advert_int 1 (000, 001)                   every v2 interop test; mismatch:
//	                                            TestInteropMisconfiguredPeer
//	authentication PASS, auth_pass longer     TestInteropMisconfiguredPeer (first 8
//	  than 8 (000, 001: managed_api_vip,        characters equal = one group; different
//	  managed_ingress_vip)                      password, PASS against none = both master);
//	                                            TestReloadAuthOrVersionKeepsMaster
//	authentication in a VRRPv3 instance       TestInteropMisconfiguredPeer (ignored, as
//	  (OpenShift's IPv6 instances)              keepalived runs it)
//	virtual_ipaddress a.b.c.d/32, /16 (001)   every interop test (/32); the address list
//	                                            differing: TestInteropMisconfiguredPeer;
//	                                            /16: TestInteropSlash16 (address, scope,
//	                                            routes as keepalived installs them; none left
//	                                            after preemption or stop)
//	virtual_ipaddress ... label (rendered)    node TestStoryMixedCluster
//	multicast (000, 001)                      TestInteropVipstackHighest/KeepalivedHighest
//	unicast_src_ip/unicast_peer (ipfailover,  TestInteropVipstackHighest/KeepalivedHighest,
//	  rendered)                                 TestInteropPartition, TestUnicastSourceNotLocal
//	vrrp_version 3, IPv6 (ipfailover, dual    TestInteropVipstackHighest/KeepalivedHighest,
//	  stack)                                    node TestStoryMixedVRRPv3/DualStack; v2 against
//	                                            v3: TestInteropMisconfiguredPeer
//	nopreempt (ipfailover)                    TestInteropTrackScript
//	preempt_delay (ipfailover)                TestInteropPreemptDelay (BACKUP through
//	                                            the delay, MASTER after it; a master leaving
//	                                            during it is taken over at once);
//	                                            TestInteropPreemptDelayMasterLeaves
//	                                            (after the skew time, not a master-down
//	                                            interval: order of the adverts)
//	notify, notify_master/_backup/_fault/     TestInteropNotify (the calls keepalived
//	  _stop (002, 004)                          and vipstack make through the same
//	                                            transitions, shutdown included);
//	                                            TestInteropSyncGroupFirstProbe (group
//	                                            and instance scripts; stopped in INIT);
//	                                            ipfailover TestPoolWithKeepalived
//	garp_master_delay                         TestLowerMasterAnnouncesLast (vipstack only)
//	vrrp_sync_group                           TestSyncGroup;
//	                                            TestInteropSyncGroupFirstProbe
//	track_interface, dont_track_primary       none (not in the seeds; unit tests only)
//	virtual_routes, native_ipv6, AH auth      none (not in the seeds; AH is refused)
//	ipfailover OPENSHIFT_HA_VRRP_ID_OFFSET    ipfailover TestVRIDConflictKeepalived
//	  (002)
//	ipfailover CHECK_SCRIPT/CHECK_INTERVAL/   ipfailover TestPoolWithKeepalived (keepalived
//	  MONITOR_PORT/NOTIFY_SCRIPT/               running ipfailover's rendered file beside a
//	  PREEMPTION (002)                          vipstack node: VIPs follow the check both ways)
//	ipfailover NETWORK_INTERFACE unset,       ipfailover
//	  VIP_GROUPS (002)                          TestPoolWithKeepalivedRouteInterfaceGroups
//	                                            (keepalived running the rendered file: eth0
//	                                            chosen beside an eth1, three groups, VIPs
//	                                            follow the check both ways)
//	keepalived-operator flags (004:           none (no VRRP effect)
//	  --dont-fork --use-file --config-id)
//
// The tests of interop_priority, interop_scripts and interop_config
// (_linux_test.go) close the gaps of that table; this file holds their
// helpers.

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// interopPrefix1 starts the namespace names of the tests in this file.
const interopPrefix1 = "vsmk"

// interopPrefix2 starts the namespace names of the tests in this file.
const interopPrefix2 = "vsmm"

// interopPrefix3 starts the namespace names of the tests in this file.
const interopPrefix3 = "vsq"

// waitHolders polls until, for every host i, whether it holds vips[i] is
// want[i], and that has lasted for stable (bounded by timeout).
func waitHolders(t *testing.T, hs []*testnet.Host, vips []netip.Addr, want []bool, stable, timeout time.Duration, why string) {
	t.Helper()
	start := time.Now()
	var since time.Time
	var got []bool
	for time.Since(start) < timeout {
		got = got[:0]
		for i, h := range hs {
			held, err := h.HasAddr(vips[i])
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, held)
		}
		if slices.Equal(got, want) {
			if since.IsZero() {
				since = time.Now()
			}
			if time.Since(since) >= stable {
				t.Logf("%s: holders %v", why, want)
				return
			}
		} else {
			since = time.Time{}
		}
		time.Sleep(20 * time.Millisecond) // polling the kernel, bounded by timeout
	}
	t.Fatalf("%s: after %v the hosts hold their VIPs %v, want %v", why, timeout, got, want)
}

// source is the address host i's instance advertises from, the one VRRP
// compares on a priority tie: unicast_src_ip, else the interface's primary
// IPv4 address or IPv6 link-local address.
func (c *cluster) source(i int) netip.Addr {
	h := c.topo.Hosts[i]
	switch {
	case c.m.family == 4:
		return h.IPv4.Addr()
	case c.m.unicast:
		return h.IPv6.Addr()
	default:
		return h.LinkLocal
	}
}

// isolate sets or clears the bridge's isolated flag on every host's
// port: isolated ports forward nothing to each other, while every link
// keeps its carrier (testnet's Cut takes the host's carrier away, and both
// implementations go to FAULT on that instead of becoming master).
func isolate(t *testing.T, topo *testnet.Topology, on bool) {
	t.Helper()
	state := "off"
	if on {
		state = "on"
	}
	for _, h := range topo.Hosts {
		out, err := exec.Command("bridge", "-n", topo.Switch, "link", "set", "dev", fmt.Sprintf("p%d", h.Index), "isolated", state).CombinedOutput()
		if err != nil {
			t.Fatalf("isolate %s's port %s: %v: %s", h.Name, state, err, out)
		}
	}
}

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

package ipfailover_test

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/ipfailover"
	"github.com/vipstack/vipstack/internal/testnet"
)

const monitorPort = 8080

// fastFlags are the vipstack-only flags that keep root tests short.
var fastFlags = []string{"--vrrp-version", "3", "--advert-int", "100ms", "--vrid-probe", "300ms", "--log-level", "debug"}

func mustExpand(t *testing.T, s string) []netip.Addr {
	t.Helper()
	v, err := ipfailover.ExpandVIPs(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func without(hs []*testnet.Host, i int) []*testnet.Host {
	return slices.Delete(slices.Clone(hs), i, i+1)
}

// TestPool300 runs a pool of 300 VIPs (past the image's 255) on three nodes:
// every VIP is held by exactly one node, within one VIP of even; a killed
// node's VIPs move to the two others, one group to each, never held twice;
// the node comes back and takes its share again. The interface is found by
// route lookup towards the VIPs.
func TestPool300(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 3, Prefix: "vsL"})
	const vipList = "198.18.16.1-198.18.17.44"
	vips := mustExpand(t, vipList)
	if len(vips) != 300 {
		t.Fatalf("%d VIPs, want 300", len(vips))
	}
	env := []string{
		"OPENSHIFT_HA_CONFIG_NAME=vsl300",
		"OPENSHIFT_HA_VIRTUAL_IPS=" + vipList,
		"OPENSHIFT_HA_REPLICA_COUNT=3",
		fmt.Sprintf("OPENSHIFT_HA_MONITOR_PORT=%d", monitorPort),
		"OPENSHIFT_HA_CHECK_INTERVAL=0.2",
	}
	states := make([]string, 3)
	for i, h := range topo.Hosts {
		// The VIPs' network is on-link on eth0: the route lookup finds it.
		if _, err := h.Run("ip", "route", "add", "198.18.16.0/20", "dev", "eth0"); err != nil {
			t.Fatal(err)
		}
		listen(t, h, monitorPort)
		states[i] = t.TempDir()
	}
	start := func(i int) *node {
		return startNode(t, topo.Hosts[i], env, append([]string{"--state-dir", states[i]}, fastFlags...)...)
	}
	nodes := []*node{start(0), start(1), start(2)}
	s := waitSpread(t, "start", topo.Hosts, vips, 500*time.Millisecond, 20*time.Second, even)
	if !slices.Equal(s.counts, []int{100, 100, 100}) {
		t.Errorf("start: counts %v, want 100 each", s.counts)
	}
	st, err := nodes[0].status()
	if err != nil {
		t.Fatal(err)
	}
	if st.Interface != "eth0" || len(st.Groups) != 6 || st.Held != 100 {
		t.Errorf("status of node 1: interface %q, %d groups, holding %d; want eth0, 6 groups, 100", st.Interface, len(st.Groups), st.Held)
	}
	total := 0
	for _, g := range st.Groups {
		total += g.VIPs
	}
	if total != 300 {
		t.Errorf("status of node 1: its groups hold %d VIPs in all, want 300 (the plan's counts, its lists dropped once the engine runs)", total)
	}

	nodes[0].kill()
	survivors := without(topo.Hosts, 0)
	s = waitSpread(t, "node 1 killed", survivors, vips, 500*time.Millisecond, 10*time.Second,
		func(s spread) bool { return once(s) && slices.Equal(s.counts, []int{150, 150}) })

	nodes[0] = start(0)
	waitSpread(t, "node 1 back", topo.Hosts, vips, 500*time.Millisecond, 15*time.Second,
		func(s spread) bool { return once(s) && slices.Equal(s.counts, []int{100, 100, 100}) })
}

// TestPoolMonitorPort: a node whose monitor port does not answer never
// holds VIPs; when it starts answering the node takes its share; when the
// port of another node closes, that node's VIPs move away.
func TestPoolMonitorPort(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 3, Prefix: "vsL"})
	const vipList = "198.18.0.100-129"
	vips := mustExpand(t, vipList)
	env := []string{
		"OPENSHIFT_HA_CONFIG_NAME=vslmon",
		"OPENSHIFT_HA_VIRTUAL_IPS=" + vipList,
		"OPENSHIFT_HA_REPLICA_COUNT=3",
		"OPENSHIFT_HA_NETWORK_INTERFACE=eth0",
		fmt.Sprintf("OPENSHIFT_HA_MONITOR_PORT=%d", monitorPort),
		"OPENSHIFT_HA_CHECK_INTERVAL=0.2",
		"OPENSHIFT_HA_PREEMPTION=preempt",
	}
	ln1 := listen(t, topo.Hosts[0], monitorPort)
	listen(t, topo.Hosts[1], monitorPort)
	var nodes []*node
	for _, h := range topo.Hosts {
		nodes = append(nodes, startNode(t, h, env, fastFlags...))
	}
	s := waitSpread(t, "node 3's port closed at start", topo.Hosts, vips, 500*time.Millisecond, 20*time.Second,
		func(s spread) bool { return once(s) && s.counts[2] == 0 })
	if !slices.Equal(s.counts, []int{15, 15, 0}) {
		t.Errorf("counts %v, want node 3's 10 VIPs shared between nodes 1 and 2: [15 15 0]", s.counts)
	}
	// Never, not even for a moment: watch it for a while.
	for range 20 {
		s, err := spreadOf(topo.Hosts, vips)
		if err != nil {
			t.Fatal(err)
		}
		if s.counts[2] != 0 {
			t.Fatalf("node 3 holds %d VIPs although its monitor port is closed", s.counts[2])
		}
		time.Sleep(50 * time.Millisecond) // sampling the kernel's address list
	}
	st, err := nodes[2].status()
	if err != nil {
		t.Fatal(err)
	}
	if st.CheckPassedAtStart || st.Held != 0 {
		t.Errorf("node 3 status: check passed at start %v, holding %d; want false, 0", st.CheckPassedAtStart, st.Held)
	}

	listen(t, topo.Hosts[2], monitorPort)
	waitSpread(t, "node 3's port opens", topo.Hosts, vips, 500*time.Millisecond, 10*time.Second,
		func(s spread) bool { return once(s) && slices.Equal(s.counts, []int{10, 10, 10}) })

	ln1.Close()
	waitSpread(t, "node 1's port closes", topo.Hosts, vips, 500*time.Millisecond, 10*time.Second,
		func(s spread) bool { return once(s) && slices.Equal(s.counts, []int{0, 15, 15}) })
}

// TestPoolPodSpec runs the pool with the environment of the example pod
// spec in OpenShift's documentation, unchanged except for the addresses and
// file paths, and no vipstack flag besides the state directory: VRRPv2,
// advert 1 s, the image's defaults. The iptables-nft INPUT chain drops
// everything but loopback, so the nodes hear each other only through the
// rule vipstack inserts (and removes on exit). The notify script gets
// keepalived's arguments.
func TestPoolPodSpec(t *testing.T) {
	testnet.RequireRoot(t)
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("nft is not installed")
	}
	vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 3, Prefix: "vsL"})
	dir := t.TempDir()
	check := filepath.Join(dir, "mycheckscript.sh")
	notify := filepath.Join(dir, "mynotifyscript.sh")
	notified := filepath.Join(dir, "notified")
	if err := os.WriteFile(check, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(notify, []byte("#!/bin/sh\necho \"$@\" >> "+notified+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"OPENSHIFT_HA_CONFIG_NAME=ipfailover",
		"OPENSHIFT_HA_VIRTUAL_IPS=198.18.0.200-201",
		"OPENSHIFT_HA_VIP_GROUPS=10",
		"OPENSHIFT_HA_NETWORK_INTERFACE=eth0",
		"OPENSHIFT_HA_MONITOR_PORT=30060",
		"OPENSHIFT_HA_VRRP_ID_OFFSET=10",
		"OPENSHIFT_HA_REPLICA_COUNT=3",
		"OPENSHIFT_HA_USE_UNICAST=false",
		"OPENSHIFT_HA_IPTABLES_CHAIN=INPUT",
		"OPENSHIFT_HA_NOTIFY_SCRIPT=" + notify,
		"OPENSHIFT_HA_CHECK_SCRIPT=" + check,
		"OPENSHIFT_HA_PREEMPTION=preempt_delay 300",
		"OPENSHIFT_HA_CHECK_INTERVAL=2",
	}
	vips := mustExpand(t, "198.18.0.200-201")
	for _, h := range topo.Hosts {
		for _, c := range [][]string{
			{"add", "table", "ip", "filter"},
			{"add", "chain", "ip", "filter", "INPUT", "{ type filter hook input priority 0; policy drop; }"},
			{"add", "rule", "ip", "filter", "INPUT", "iif", "lo", "accept"},
		} {
			if _, err := h.Run("nft", c...); err != nil {
				t.Fatal(err)
			}
		}
	}
	var nodes []*node
	for _, h := range topo.Hosts {
		nodes = append(nodes, startNode(t, h, env))
	}
	// Two VIPs, two groups: ranks 0 and 1 (198.18.0.12 and .13, by address
	// modulo 3) hold one each; rank 2 (198.18.0.11) is backup for both.
	waitSpread(t, "start", topo.Hosts, vips, 3*time.Second, 30*time.Second,
		func(s spread) bool { return once(s) && slices.Equal(s.counts, []int{0, 1, 1}) })
	for _, h := range topo.Hosts {
		out, err := h.Run("nft", "list", "chain", "ip", "filter", "INPUT")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, `comment "vipstack ipfailover ipfailover"`) || !strings.Contains(out, "224.0.0.18") {
			t.Errorf("%s: INPUT chain has no rule admitting VRRP:\n%s", h.Name, out)
		}
	}
	nodes[1].kill()
	waitSpread(t, "node 2 killed", without(topo.Hosts, 1), vips, 3*time.Second, 20*time.Second,
		func(s spread) bool { return once(s) })

	nodes[2].term(t)
	out, err := topo.Hosts[2].Run("nft", "list", "chain", "ip", "filter", "INPUT")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "vipstack") || !strings.Contains(out, "iif \"lo\" accept") {
		t.Errorf("after SIGTERM the INPUT chain should hold only its own rule:\n%s", out)
	}
	b, err := os.ReadFile(notified)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"INSTANCE ipfailover_VIP_1 MASTER 250", "INSTANCE ipfailover_VIP_2 MASTER 250", "INSTANCE ipfailover_VIP_2 STOP "} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the notify script was not called with %q; it got:\n%s", want, b)
		}
	}
}

// TestVRIDConflictKeepalived: a real keepalived speaks VRID 12 on the link.
// With the offset left to vipstack, the pool hears it before starting,
// reports it and uses other VRIDs; with the offset fixed it reports the
// conflict at start and the engine reports the keepalived router as a
// conflict on that VRID while running.
func TestVRIDConflictKeepalived(t *testing.T) {
	testnet.RequireRoot(t)
	if _, err := exec.LookPath("keepalived"); err != nil {
		t.Skip("keepalived is not installed")
	}
	vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 3, Prefix: "vsL"})
	dir := t.TempDir()
	conf := `global_defs {
    router_id foreign
}
vrrp_instance foreign {
    state MASTER
    interface eth0
    virtual_router_id 12
    version 3
    priority 100
    advert_int 0.1
    virtual_ipaddress {
        198.18.0.99/32
    }
}
`
	if err := os.WriteFile(filepath.Join(dir, "keepalived.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	ka := topo.Hosts[2].Command("keepalived", "-n", "-l", "-D", "--vrrp", "-f", filepath.Join(dir, "keepalived.conf"),
		"-p", filepath.Join(dir, "keepalived.pid"), "-r", filepath.Join(dir, "vrrp.pid"))
	if err := topo.Hosts[2].Start(ka); err != nil {
		t.Fatal(err)
	}
	// The foreign router must be speaking before the pool listens.
	waitSpread(t, "keepalived master of VRID 12", topo.Hosts[2:], mustExpand(t, "198.18.0.99"), 300*time.Millisecond, 10*time.Second, once)
	vips := mustExpand(t, "198.18.0.200-203")
	pool := topo.Hosts[:2]
	env := []string{
		"OPENSHIFT_HA_VIRTUAL_IPS=198.18.0.200-203",
		"OPENSHIFT_HA_REPLICA_COUNT=2",
		"OPENSHIFT_HA_NETWORK_INTERFACE=eth0",
		"OPENSHIFT_HA_MONITOR_PORT=0",
	}
	args := []string{"--vrrp-version", "3", "--advert-int", "100ms", "--vrid-probe", "1s"}

	t.Run("offset free: avoided", func(t *testing.T) {
		var nodes []*node
		for _, h := range pool {
			nodes = append(nodes, startNode(t, h, env, args...))
		}
		waitSpread(t, "start", pool, vips, 500*time.Millisecond, 15*time.Second, even)
		for _, n := range nodes {
			st, err := n.status()
			if err != nil {
				t.Fatal(err)
			}
			var vrids []uint8
			for _, g := range st.Groups {
				vrids = append(vrids, g.VRID)
			}
			want := ipfailover.Finding{VRID: 12, From: []netip.Addr{topo.Hosts[2].IPv4.Addr()}, Action: "avoided"}
			if len(st.Findings) != 1 || st.Findings[0].String() != want.String() || !slices.Equal(vrids, []uint8{11, 13}) {
				t.Errorf("%s: findings %v, VRIDs %v; want [%v] and VRIDs [11 13]", n.h.Name, st.Findings, vrids, want)
			}
			if !strings.Contains(n.log.String(), "VRID 12 is spoken on the link by 198.18.0.13, not by this pool: avoided") {
				t.Errorf("%s: the log does not report VRID 12", n.h.Name)
			}
		}
		for _, n := range nodes {
			n.term(t)
		}
	})

	t.Run("offset fixed: conflict", func(t *testing.T) {
		var nodes []*node
		for _, h := range pool {
			nodes = append(nodes, startNode(t, h, append(env, "OPENSHIFT_HA_VRRP_ID_OFFSET=10"), args...))
		}
		waitSpread(t, "start", pool, vips, 500*time.Millisecond, 15*time.Second, once)
		deadline := time.Now().Add(10 * time.Second)
		for _, n := range nodes {
			for {
				st, err := n.status()
				if err != nil {
					t.Fatal(err)
				}
				startOK := len(st.Findings) == 1 && st.Findings[0].Action == "conflict" && st.Findings[0].VRID == 12
				running := false
				for _, g := range st.Groups {
					for _, c := range g.Conflicts {
						running = running || (g.VRID == 12 && c.Peer == topo.Hosts[2].IPv4.Addr().String())
					}
				}
				if startOK && running {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: conflict not reported: findings %v, groups %+v", n.h.Name, st.Findings, st.Groups)
				}
				time.Sleep(100 * time.Millisecond) // polling the status endpoint, bounded by the deadline
			}
			if !strings.Contains(n.log.String(), "CONFLICT") {
				t.Errorf("%s: the log does not report the conflict", n.h.Name)
			}
		}
	})
}

// TestPoolIPv6: an IPv6 pool (VRRPv3, unsolicited NAs) on three nodes:
// held once and evenly, and a killed node's VIPs move.
func TestPoolIPv6(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 3, Prefix: "vsL"})
	const vipList = "fd00:bb::1:0-1d"
	vips := mustExpand(t, vipList)
	env := []string{
		"OPENSHIFT_HA_CONFIG_NAME=vsl6",
		"OPENSHIFT_HA_VIRTUAL_IPS=" + vipList,
		"OPENSHIFT_HA_REPLICA_COUNT=3",
		fmt.Sprintf("OPENSHIFT_HA_MONITOR_PORT=%d", monitorPort),
		"OPENSHIFT_HA_CHECK_INTERVAL=0.2",
	}
	var nodes []*node
	for _, h := range topo.Hosts {
		listen(t, h, monitorPort)
		nodes = append(nodes, startNode(t, h, env, fastFlags...))
	}
	waitSpread(t, "start", topo.Hosts, vips, 500*time.Millisecond, 20*time.Second,
		func(s spread) bool { return once(s) && slices.Equal(s.counts, []int{10, 10, 10}) })
	nodes[2].kill()
	waitSpread(t, "node 3 killed", topo.Hosts[:2], vips, 500*time.Millisecond, 10*time.Second,
		func(s spread) bool { return once(s) && slices.Equal(s.counts, []int{15, 15}) })
}

// TestPoolUnicast: unicast peers give exact ranks (position in the sorted
// list), no firewall rule is needed, and a killed node's VIPs move.
func TestPoolUnicast(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 3, Prefix: "vsL"})
	const vipList = "198.18.0.100-129"
	vips := mustExpand(t, vipList)
	var peers []string
	for i := len(topo.Hosts) - 1; i >= 0; i-- { // any order: ranks sort it
		peers = append(peers, topo.Hosts[i].IPv4.Addr().String())
	}
	env := []string{
		"OPENSHIFT_HA_VIRTUAL_IPS=" + vipList,
		"OPENSHIFT_HA_NETWORK_INTERFACE=eth0",
		"OPENSHIFT_HA_MONITOR_PORT=0",
		"OPENSHIFT_HA_USE_UNICAST=true",
		"OPENSHIFT_HA_UNICAST_PEERS=" + strings.Join(peers, ","),
	}
	var nodes []*node
	for _, h := range topo.Hosts {
		nodes = append(nodes, startNode(t, h, env, fastFlags...))
	}
	waitSpread(t, "start", topo.Hosts, vips, 500*time.Millisecond, 20*time.Second,
		func(s spread) bool { return once(s) && slices.Equal(s.counts, []int{10, 10, 10}) })
	for i, n := range nodes {
		st, err := n.status()
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode != "unicast" || st.Ranks.Self != i || len(st.Firewall) != 0 {
			t.Errorf("%s: mode %s, rank %d, firewall %v; want unicast, rank %d, no firewall", n.h.Name, st.Mode, st.Ranks.Self, st.Firewall, i)
		}
	}
	nodes[1].kill()
	waitSpread(t, "node 2 killed", without(topo.Hosts, 1), vips, 500*time.Millisecond, 10*time.Second,
		func(s spread) bool { return once(s) && slices.Equal(s.counts, []int{15, 15}) })
}

// TestPoolEngineCrash: when the process running a node's part of the pool
// dies (kill -9, a panic, the OOM killer), its supervisor removes the VIPs
// and the firewall table at once, so the survivors' takeover leaves no VIP
// held twice; then it starts a new process that takes the node's share
// back. keepalived, and vipstack ipfailover before its supervisor, left the
// VIPs on the dead node until the next start.
func TestPoolEngineCrash(t *testing.T) {
	testnet.RequireRoot(t)
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("nft is not installed")
	}
	vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 3, Prefix: "vsL"})
	const vipList = "198.18.0.100-129"
	vips := mustExpand(t, vipList)
	env := []string{
		"OPENSHIFT_HA_CONFIG_NAME=vslcrash",
		"OPENSHIFT_HA_VIRTUAL_IPS=" + vipList,
		"OPENSHIFT_HA_REPLICA_COUNT=3",
		"OPENSHIFT_HA_NETWORK_INTERFACE=eth0",
		"OPENSHIFT_HA_MONITOR_PORT=0",
	}
	var nodes []*node
	for _, h := range topo.Hosts {
		nodes = append(nodes, startNode(t, h, env, fastFlags...))
	}
	waitSpread(t, "start", topo.Hosts, vips, 500*time.Millisecond, 20*time.Second,
		func(s spread) bool { return once(s) && slices.Equal(s.counts, []int{10, 10, 10}) })

	// The engine is the supervisor's child; without a supervisor, the
	// process itself.
	pid := nodes[0].cmd.Process.Pid
	if kids := childrenOf(t, pid); len(kids) == 1 {
		pid = kids[0]
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The supervisor removes the VIPs, then the firewall table, at once; a
	// new engine starts a second later.
	deadline := time.Now().Add(time.Second)
	for {
		s, err := spreadOf(topo.Hosts[:1], vips)
		if err != nil {
			t.Fatal(err)
		}
		tables, err := topo.Hosts[0].Run("nft", "list", "tables")
		if err != nil {
			t.Fatal(err)
		}
		if s.counts[0] == 0 && !strings.Contains(tables, "vipstack_ipfailover_vslcrash") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("1s after its engine was killed the crashed node still holds %d VIPs, nft tables %q", s.counts[0], tables)
		}
		time.Sleep(20 * time.Millisecond) // polling the kernel's address list
	}
	waitSpread(t, "engine restarted", topo.Hosts, vips, 500*time.Millisecond, 15*time.Second,
		func(s spread) bool { return once(s) && slices.Equal(s.counts, []int{10, 10, 10}) })
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // gone
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after
		// the last ')'.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		var child, ppid int
		if len(fields) > 1 {
			fmt.Sscan(fields[1], &ppid)
			fmt.Sscan(strings.Fields(s)[0], &child)
		}
		if ppid == pid {
			out = append(out, child)
		}
	}
	return out
}

// TestPoolStopDuringProbe: SIGTERM while the node still listens for VRIDs
// (a pod deleted as it starts) is a clean stop, exit 0, not a failure.
func TestPoolStopDuringProbe(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vsL"})
	env := []string{"OPENSHIFT_HA_VIRTUAL_IPS=198.18.0.100-101", "OPENSHIFT_HA_MONITOR_PORT=0", "OPENSHIFT_HA_NETWORK_INTERFACE=eth0"}
	n := startNode(t, topo.Hosts[0], env, "--vrid-probe", "1m")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(n.log.String(), "listening for VRIDs") {
		if time.Now().After(deadline) {
			t.Fatalf("the node did not start listening for VRIDs within 10s:\n%s", n.log.String())
		}
		time.Sleep(20 * time.Millisecond) // polling the node's log
	}
	n.term(t)
	if code := n.cmd.ProcessState.ExitCode(); code != 0 || strings.Contains(n.log.String(), "failed") {
		t.Errorf("exit code %d after SIGTERM during the VRID probe, want 0 and no failure; log:\n%s", code, tail(n.log.String(), 10))
	}
}

// TestPoolRankCollision: nodes started without OPENSHIFT_HA_REPLICA_COUNT
// (the image's default, 1) share rank 0; the node that only backs up says
// so in its status, naming the other node and the variable.
func TestPoolRankCollision(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vsL"})
	env := []string{"OPENSHIFT_HA_VIRTUAL_IPS=198.18.0.100-103", "OPENSHIFT_HA_MONITOR_PORT=0", "OPENSHIFT_HA_NETWORK_INTERFACE=eth0"}
	var nodes []*node
	for _, h := range topo.Hosts {
		nodes = append(nodes, startNode(t, h, env, fastFlags...))
	}
	vips := mustExpand(t, "198.18.0.100-103")
	// Both start as backups at one priority: the first whose master-down
	// timer fires takes every VIP, and the other, hearing it, stays backup
	// (a backup does not preempt an equal priority, whatever the address).
	sp := waitSpread(t, "start", topo.Hosts, vips, 500*time.Millisecond, 20*time.Second,
		func(s spread) bool {
			return once(s) && (slices.Equal(s.counts, []int{0, 4}) || slices.Equal(s.counts, []int{4, 0}))
		})
	master, backup := 1, 0
	if sp.counts[0] == 4 {
		master, backup = 0, 1
	}
	st, err := nodes[backup].status()
	if err != nil {
		t.Fatal(err)
	}
	other := topo.Hosts[master].IPv4.Addr().String()
	if len(st.Warnings) != 1 || !strings.HasPrefix(st.Warnings[0], other+" holds group") || !strings.Contains(st.Warnings[0], "set OPENSHIFT_HA_REPLICA_COUNT") {
		t.Errorf("warnings of the node that only backs up: %q; want one naming %s and OPENSHIFT_HA_REPLICA_COUNT", st.Warnings, other)
	}
	if st, err := nodes[master].status(); err != nil || len(st.Warnings) != 0 {
		t.Errorf("warnings of the master: %q, %v; want none", st.Warnings, err)
	}
}

// TestPoolRemovesLeftovers: a node that restarts without the ledger of its
// earlier run (the container's state directory is gone with it) and does
// not become master still removes the pool's VIPs left on its interface,
// as keepalived does at start; other addresses stay.
func TestPoolRemovesLeftovers(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vsL"})
	h := topo.Hosts[0]
	left := []string{"198.18.0.100/32", "198.18.0.101/32"}
	other := "198.18.0.200/32"
	for _, p := range append(left, other) {
		if _, err := h.Run("ip", "addr", "add", p, "dev", "eth0"); err != nil {
			t.Fatal(err)
		}
	}
	// The monitor port is closed: the node starts in FAULT and holds nothing.
	env := []string{"OPENSHIFT_HA_VIRTUAL_IPS=198.18.0.100-103", fmt.Sprintf("OPENSHIFT_HA_MONITOR_PORT=%d", monitorPort),
		"OPENSHIFT_HA_NETWORK_INTERFACE=eth0"}
	n := startNode(t, h, env, fastFlags...)
	deadline := time.Now().Add(15 * time.Second)
	for {
		st, err := n.status()
		if err == nil && st.Phase == "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not running within 15s: %+v, %v", st, err)
		}
		time.Sleep(50 * time.Millisecond) // polling the status
	}
	addrs, err := h.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range left {
		if slices.Contains(addrs, p) {
			t.Errorf("%s, left by an earlier run, is still on the node: %v", p, addrs)
		}
	}
	if !slices.Contains(addrs, other) || !slices.Contains(addrs, h.IPv4.String()) {
		t.Errorf("addresses not of the pool were removed: %v", addrs)
	}
}

// TestPoolConfigErrorStops: a configuration the link cannot serve (more
// groups than VRIDs above a fixed offset) stops the node with exit status
// 2 and the error once; the supervisor does not start it again in a loop
// that would hide the error behind a running process.
func TestPoolConfigErrorStops(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vsL"})
	env := []string{"OPENSHIFT_HA_VIRTUAL_IPS=198.18.0.100-109", "OPENSHIFT_HA_MONITOR_PORT=0", "OPENSHIFT_HA_NETWORK_INTERFACE=eth0",
		"OPENSHIFT_HA_VIP_GROUPS=10", "OPENSHIFT_HA_VRRP_ID_OFFSET=250"}
	n := startNode(t, topo.Hosts[0], env, fastFlags...)
	if !n.wait(10 * time.Second) {
		t.Fatalf("still running 10s after start; log:\n%s", tail(n.log.String(), 10))
	}
	log := n.log.String()
	if code := n.cmd.ProcessState.ExitCode(); code != 2 || strings.Count(log, "lower OPENSHIFT_HA_VIP_GROUPS") != 1 {
		t.Errorf("exit status %d, the error logged %d times; want 2 and once; log:\n%s", code, strings.Count(log, "lower OPENSHIFT_HA_VIP_GROUPS"), tail(log, 10))
	}
}

// TestPoolNameTaken: a second pool with the first one's name on the same
// node (both left at the default name, with a shared state directory) is
// refused, naming the variable; it used to sweep the first pool's VIPs as
// leftovers of a crash (one ledger) and take over its firewall rule.
func TestPoolNameTaken(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vsL"})
	h := topo.Hosts[0]
	state := t.TempDir()
	first := mustExpand(t, "198.18.0.100-104")
	startNode(t, h, []string{"OPENSHIFT_HA_VIRTUAL_IPS=198.18.0.100-104", "OPENSHIFT_HA_MONITOR_PORT=0"}, append([]string{"--state-dir", state}, fastFlags...)...)
	waitSpread(t, "first pool", []*testnet.Host{h}, first, 300*time.Millisecond, 15*time.Second,
		func(s spread) bool { return once(s) })
	second := startNode(t, h, []string{"OPENSHIFT_HA_VIRTUAL_IPS=198.18.0.150-154", "OPENSHIFT_HA_MONITOR_PORT=0"}, append([]string{"--state-dir", state}, fastFlags...)...)
	if !second.wait(10 * time.Second) {
		t.Errorf("the second pool of the same name still runs after 10s")
	}
	if log := second.log.String(); !strings.Contains(log, `OPENSHIFT_HA_CONFIG_NAME="OpenShift-IPFailover": another vipstack ipfailover runs a pool of that name`) {
		t.Errorf("the second pool's log does not say why it stopped:\n%s", tail(log, 10))
	}
	waitSpread(t, "first pool after the second", []*testnet.Host{h}, first, time.Second, 5*time.Second,
		func(s spread) bool { return once(s) })
}

// TestPoolCheckScriptEnvironment: the check script sees the pool's
// OPENSHIFT_HA_* variables (flags as their variable), at start and while
// running, as keepalived passes its environment to the image's scripts
// (a script reading $OPENSHIFT_HA_MONITOR_PORT failed under vipstack, so
// the node never held a VIP).
func TestPoolCheckScriptEnvironment(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vsL"})
	dir := t.TempDir()
	out := filepath.Join(dir, "env.log")
	check := filepath.Join(dir, "check.sh")
	if err := os.WriteFile(check, []byte("#!/bin/sh\necho \"$OPENSHIFT_HA_CONFIG_NAME $OPENSHIFT_HA_MONITOR_PORT $OPENSHIFT_HA_PREEMPTION\" >> "+out+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"OPENSHIFT_HA_VIRTUAL_IPS=198.18.0.100", "OPENSHIFT_HA_CONFIG_NAME=vslenv", "OPENSHIFT_HA_MONITOR_PORT=8080",
		"OPENSHIFT_HA_NETWORK_INTERFACE=eth0", "OPENSHIFT_HA_CHECK_SCRIPT=" + check, "OPENSHIFT_HA_CHECK_INTERVAL=0.2"}
	startNode(t, topo.Hosts[0], env, append(fastFlags, "--preemption-strategy", "nopreempt")...)
	const want = "vslenv 8080 nopreempt"
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(out)
		var lines []string
		if len(b) > 0 {
			lines = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		}
		if len(lines) >= 3 {
			for i, l := range lines {
				if l != want {
					t.Fatalf("run %d of the check script saw %q, want %q (all runs: %q)", i+1, l, want, lines)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the check script ran %d times in 10s: %q", len(lines), lines)
		}
		time.Sleep(50 * time.Millisecond) // polling the script's output
	}
}

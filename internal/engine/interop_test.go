package engine_test

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// vipstackBin builds the binary once per test run.
func vipstackBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vipstack-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath, binErr = peers.BuildVipstack(dir)
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

type mode struct {
	version int
	family  int
	unicast bool
}

func (m mode) String() string {
	cast := "multicast"
	if m.unicast {
		cast = "unicast"
	}
	return fmt.Sprintf("v%d-ipv%d-%s", m.version, m.family, cast)
}

func (m mode) interval() time.Duration {
	if m.version == 2 {
		return time.Second
	}
	return 100 * time.Millisecond
}

// cluster is three VRRP speakers on one bridge.
type cluster struct {
	t     *testing.T
	topo  *testnet.Topology
	m     mode
	vip   netip.Addr
	nodes []*peers.Node
	impls []peers.Impl
	prios []int
	extra []func(*peers.Conf)
}

func newCluster(t *testing.T, m mode, impls []peers.Impl, prios []int) *cluster {
	topo := testnet.New(t, testnet.Options{Hosts: len(impls), Prefix: "vsi"})
	c := &cluster{t: t, topo: topo, m: m, impls: impls, prios: prios, nodes: make([]*peers.Node, len(impls)), extra: make([]func(*peers.Conf), len(impls))}
	c.vip = netip.MustParseAddr("198.18.0.100")
	if m.family == 6 {
		c.vip = netip.MustParseAddr("fd00:bb::100")
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, n := range c.nodes {
				if n != nil {
					t.Logf("---- node %d (%s) log:\n%s", i+1, n.Impl, tail(n.Log(), 60))
				}
			}
		}
	})
	return c
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

func (c *cluster) conf(i int) peers.Conf {
	h := c.topo.Hosts[i]
	conf := peers.Conf{
		Version:  c.m.version,
		Interval: c.m.interval(),
		VRID:     51,
		Priority: c.prios[i],
		VIP:      netip.PrefixFrom(c.vip, c.vip.BitLen()),
	}
	if c.m.version == 2 {
		conf.Auth = "managed_api_vip" // longer than 8: truncated on the wire by both
	}
	if c.m.unicast {
		conf.Source = h.IPv4.Addr()
		if c.m.family == 6 {
			conf.Source = h.IPv6.Addr()
		}
		for j, o := range c.topo.Hosts {
			if j == i {
				continue
			}
			if c.m.family == 6 {
				conf.Peers = append(conf.Peers, o.IPv6.Addr())
			} else {
				conf.Peers = append(conf.Peers, o.IPv4.Addr())
			}
		}
	}
	if f := c.extra[i]; f != nil {
		f(&conf)
	}
	return conf
}

func (c *cluster) start(i int) {
	c.t.Helper()
	text, err := c.conf(i).Render(fmt.Sprintf("node%d", i+1))
	if err != nil {
		c.t.Fatal(err)
	}
	dir := filepath.Join(c.t.TempDir(), fmt.Sprintf("node%d", i+1))
	n, err := peers.Start(c.topo.Hosts[i], c.impls[i], text, dir, vipstackBin(c.t))
	if err != nil {
		c.t.Fatal(err)
	}
	c.nodes[i] = n
}

func (c *cluster) startAll() {
	for i := range c.impls {
		c.start(i)
	}
}

// waitMaster waits until host i is the only one among the live nodes (and
// every node when all are alive) holding the VIP, stable for three adverts.
func (c *cluster) waitMaster(i int, why string, exclude ...int) time.Duration {
	c.t.Helper()
	var hs []*testnet.Host
	for j, h := range c.topo.Hosts {
		skip := false
		for _, x := range exclude {
			skip = skip || x == j
		}
		if !skip {
			hs = append(hs, h)
		}
	}
	d, err := peers.WaitSoleHolder(hs, c.vip, c.topo.Hosts[i], 3*c.m.interval(), 20*time.Second)
	if err != nil {
		c.t.Fatalf("%s: %v", why, err)
	}
	c.t.Logf("%s: node%d (%s) is the only master after %v", why, i+1, c.impls[i], d.Round(time.Millisecond))
	return d
}

func allModes() []mode {
	return []mode{
		{version: 2, family: 4},
		{version: 2, family: 4, unicast: true},
		{version: 3, family: 4},
		{version: 3, family: 4, unicast: true},
		{version: 3, family: 6},
		{version: 3, family: 6, unicast: true},
	}
}

// TestInteropVipstackHighest: vipstack at the highest priority, keepalived
// next. The best node wins; SIGTERM and kill -9 of the vipstack master hand
// the VIP to keepalived; a restarted vipstack preempts it back.
func TestInteropVipstackHighest(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	for _, m := range allModes() {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			c := newCluster(t, m, []peers.Impl{peers.Vipstack, peers.Keepalived, peers.Vipstack}, []int{150, 100, 50})
			c.startAll()
			c.waitMaster(0, "start")
			if err := c.nodes[0].Term(); err != nil {
				t.Fatal(err)
			}
			c.waitMaster(1, "SIGTERM of the vipstack master")
			c.start(0)
			c.waitMaster(0, "vipstack restarted at higher priority preempts keepalived")
			if err := c.nodes[0].Kill(); err != nil {
				t.Fatal(err)
			}
			c.waitMaster(1, "kill -9 of the vipstack master", 0)
		})
	}
}

// TestInteropKeepalivedHighest: keepalived at the highest priority,
// vipstack next.
func TestInteropKeepalivedHighest(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	for _, m := range allModes() {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			c := newCluster(t, m, []peers.Impl{peers.Keepalived, peers.Vipstack, peers.Keepalived}, []int{150, 100, 50})
			c.startAll()
			c.waitMaster(0, "start")
			if err := c.nodes[0].Term(); err != nil {
				t.Fatal(err)
			}
			c.waitMaster(1, "SIGTERM of the keepalived master")
			c.start(0)
			c.waitMaster(0, "keepalived restarted at higher priority preempts vipstack")
			if err := c.nodes[0].Kill(); err != nil {
				t.Fatal(err)
			}
			// keepalived leaves its VIP behind after a crash (PEER-FACTS):
			// look at the live nodes only.
			c.waitMaster(1, "kill -9 of the keepalived master", 0)
		})
	}
}

// TestInteropTrackScript: a failing vrrp_script (weight -60) on the master
// moves the VIP to the next node; recovery moves it back with preemption
// and leaves it with nopreempt. Run with the script on a vipstack node and
// on a keepalived node.
func TestInteropTrackScript(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	m := mode{version: 2, family: 4}
	for _, tc := range []struct {
		name      string
		impls     []peers.Impl
		noPreempt bool
	}{
		{name: "vipstack-scripted-preempt", impls: []peers.Impl{peers.Vipstack, peers.Keepalived, peers.Vipstack}},
		{name: "vipstack-scripted-nopreempt", impls: []peers.Impl{peers.Vipstack, peers.Keepalived, peers.Vipstack}, noPreempt: true},
		{name: "keepalived-scripted-preempt", impls: []peers.Impl{peers.Keepalived, peers.Vipstack, peers.Keepalived}},
		{name: "keepalived-scripted-nopreempt", impls: []peers.Impl{peers.Keepalived, peers.Vipstack, peers.Keepalived}, noPreempt: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCluster(t, m, tc.impls, []int{100, 80, 60})
			flag := filepath.Join(t.TempDir(), "fail")
			// nopreempt on node1 only: the others must still preempt it
			// when its priority drops.
			c.extra[0] = func(conf *peers.Conf) {
				conf.Script = "/usr/bin/test ! -e " + flag
				conf.Weight = -60
				conf.NoPreempt = tc.noPreempt
			}
			// node1 starts first: with nopreempt it would otherwise accept
			// whichever node happened to win the start-up race.
			c.start(0)
			c.waitMaster(0, "node1 alone")
			c.start(1)
			c.start(2)
			c.waitMaster(0, "all three running")
			if err := os.WriteFile(flag, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			c.waitMaster(1, "script on node1 fails: priority 100-60=40 < 80")
			if err := os.Remove(flag); err != nil {
				t.Fatal(err)
			}
			if tc.noPreempt {
				// Give preemption every chance to happen: it must not.
				c.waitMaster(1, "script recovers with nopreempt: node2 keeps the VIP")
				time.Sleep(5 * c.m.interval()) // observing that nothing happens, not waiting for a timer of ours
				c.waitMaster(1, "still node2 after five more adverts")
			} else {
				c.waitMaster(0, "script recovers with preempt: node1 takes the VIP back")
			}
		})
	}
}

// TestInteropPartition cuts the master's link to the switch and heals it:
// the best backup takes over meanwhile, and after healing exactly one
// master remains (the preempting node1).
func TestInteropPartition(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	for _, m := range []mode{{version: 3, family: 4}, {version: 2, family: 4, unicast: true}} {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			c := newCluster(t, m, []peers.Impl{peers.Vipstack, peers.Keepalived, peers.Vipstack}, []int{150, 100, 50})
			c.startAll()
			c.waitMaster(0, "start")
			if err := c.topo.Hosts[0].Cut(true); err != nil {
				t.Fatal(err)
			}
			c.waitMaster(1, "node1 cut off: node2 takes over on the connected side", 0)
			if err := c.topo.Hosts[0].Cut(false); err != nil {
				t.Fatal(err)
			}
			c.waitMaster(0, "healed: one master, node1")
		})
	}
}

// TestSupervisorReleasesVIPsWhenTheEngineDies: kill -9 of the vipstack
// engine (not its supervisor) removes its VIP at once, the backup takes
// over, and the supervisor starts a new engine that rejoins as backup.
func TestSupervisorReleasesVIPsWhenTheEngineDies(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	m := mode{version: 3, family: 4}
	c := newCluster(t, m, []peers.Impl{peers.Vipstack, peers.Keepalived}, []int{150, 100})
	c.startAll()
	c.waitMaster(0, "start")
	engine, err := c.nodes[0].EnginePid()
	if err != nil {
		t.Fatal(err)
	}
	if engine == c.nodes[0].Pid() {
		t.Fatal("vipstack runs without a supervised engine child")
	}
	if err := syscall.Kill(engine, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for {
		held, err := c.topo.Hosts[0].HasAddr(c.vip)
		if err != nil {
			t.Fatal(err)
		}
		if !held {
			t.Logf("VIP removed from the crashed node %v after kill -9 of the engine", time.Since(killed).Round(time.Millisecond))
			break
		}
		if time.Since(killed) > 5*time.Second {
			t.Fatalf("the VIP is still on node1 5 s after its engine was killed\n%s", tail(c.nodes[0].Log(), 20))
		}
		time.Sleep(5 * time.Millisecond) // polling the kernel
	}
	if !c.nodes[0].Alive() {
		t.Fatal("the supervisor died with its engine")
	}
	c.waitMaster(1, "keepalived takes over from the crashed engine")
	// The restarted engine rejoins and, at priority 150, preempts.
	c.waitMaster(0, "restarted engine preempts back")
	if !strings.Contains(c.nodes[0].Log(), "removed VIP of the crashed engine") {
		t.Errorf("the supervisor did not log what it removed")
	}
}

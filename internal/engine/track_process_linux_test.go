package engine_test

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// uniqueSleep copies sleep to a binary with a name no other process on
// the machine has, and returns a function starting one more of it; each
// is killed when the test ends or when its stop function is called.
func uniqueSleep(t *testing.T) (name string, start func() (stop func())) {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	name = fmt.Sprintf("vkatp%06d", rand.IntN(1000000))
	bin := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return name, func() func() {
		c := exec.Command(bin, "300")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		stop := func() {
			c.Process.Kill()
			c.Wait()
		}
		t.Cleanup(stop)
		return stop
	}
}

// TestTrackProcessKeepalivedInNamespace: keepalived 2.2.7 tracks
// processes through the kernel's process events connector, which only
// answers in the initial network namespace. In a test namespace it starts
// the instance in FAULT for want of quorum, as vipstack does, and then
// never sees the process start ("Failed to set/clear process event listen
// - errno 111"); vipstack, which reads /proc, leaves FAULT. This pins the
// behaviour of both, so a change in either shows. The weights, quorum,
// FAULT and delays are TestTrackProcess's, on the simulated segment.
func TestTrackProcessKeepalivedInNamespace(t *testing.T) {
	testnet.RequireRoot(t)
	name, startProc := uniqueSleep(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vkak"})
	block := "vrrp_track_process chk {\n    process " + name + "\n}\n"
	var nodes []*peers.Node
	for i, impl := range []peers.Impl{peers.Keepalived, peers.Vipstack} {
		vip := netip.MustParseAddr(fmt.Sprintf("198.18.0.%d", 101+i))
		c := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 75 + i, Priority: 100, VIP: netip.PrefixFrom(vip, 32)}
		nodes = append(nodes, startText(t, topo.Hosts[i], impl, block+withLines(t, c, topo.Hosts[i], "track_process {\n        chk\n    }")))
	}
	waitLog := func(n *peers.Node, want string) {
		t.Helper()
		for start := time.Now(); !strings.Contains(n.Log(), want); time.Sleep(50 * time.Millisecond) { // polls the log, bounded
			if time.Since(start) > 20*time.Second {
				t.Fatalf("%s never logged %q", n.Impl, want)
			}
		}
	}
	waitLog(nodes[0], "(VI_1) entering FAULT state (tracked process chk quorum not achieved)")
	waitLog(nodes[1], "tracked process chk quorum not achieved")
	startProc()
	waitHolders(t, topo.Hosts, []netip.Addr{netip.MustParseAddr("198.18.0.101"), netip.MustParseAddr("198.18.0.102")},
		[]bool{false, true}, 2*time.Second, 30*time.Second, "process running: vipstack master, keepalived still in FAULT")
	if !strings.Contains(nodes[0].Log(), "Failed to set/clear process event listen") {
		t.Log("keepalived did not report the connector failure; it may track processes in namespaces now")
	}
}

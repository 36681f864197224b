package node

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/procfs"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestSmallSupervisor runs `vipstack node` as it is deployed, with its
// supervisor. The supervisor is the process started (the exec into the
// small supervisor keeps the pid), holds a fraction of its agent's
// anonymous memory, and when the agent is killed (kill -9) releases what it held at
// once through a clean-up process (the VIP leaves the node, and the log
// says so) and starts a new agent, which takes the VIP again.
func TestSmallSupervisor(t *testing.T) {
	testnet.RequireRoot(t)
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vnm"})
	h := topo.Hosts[0]
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`name: c1
baseDomain: example.com
apiVIPs: [198.18.0.5]
ingressVIPs: [198.18.0.7]
machineNetworks: [198.18.0.0/24]
nodes:
  - {name: master-0, role: master, ips: [%s]}
`, h.IPv4.Addr())), 0o600); err != nil {
		t.Fatal(err)
	}
	vs, err := peers.StartCmd(h, h.Command(bin, "node", "--config", cfg, "--node", "master-0",
		"--state-dir", filepath.Join(dir, "state"), "--watch-interval", "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = vs.Term()
		if t.Failed() {
			t.Logf("---- vipstack node, last lines:\n%s", testutil.Tail(vs.Log(), 40))
		}
	})
	vip := netip.MustParseAddr("198.18.0.5")
	held := func(want bool) func() (bool, string) {
		return func() (bool, string) {
			has, err := h.HasAddr(vip)
			return err == nil && has == want, fmt.Sprintf("%v held: %v (%v)", vip, has, err)
		}
	}
	waitFor(t, 30*time.Second, "the agent holds the API VIP", held(true))
	agent, err := vs.EnginePid()
	if err != nil || agent == vs.Pid() {
		t.Fatalf("no agent under the supervisor %d: %d, %v", vs.Pid(), agent, err)
	}
	// Anonymous memory: how much of the executable a process keeps mapped
	// depends on the page cache's folios (a binary just built sits there
	// in large ones, mapped whole), not on the process alone.
	sup, eng := procKiB(t, vs.Pid(), "RssAnon"), procKiB(t, agent, "RssAnon")
	t.Logf("anonymous RSS: supervisor %d kB, agent %d kB", sup, eng)
	if 2*sup > eng {
		t.Errorf("the supervisor's anonymous RSS is %d kB, want at most half its agent's %d kB", sup, eng)
	}

	if err := syscall.Kill(agent, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	waitFor(t, 5*time.Second, "the VIP released after kill -9 of the agent", held(false))
	t.Logf("VIP released %v after kill -9 of the agent", time.Since(killed).Round(time.Millisecond))
	if !strings.Contains(vs.Log(), "removed VIP of the crashed engine") {
		t.Errorf("the clean-up did not log what it removed")
	}
	waitFor(t, 30*time.Second, "a new agent holds the VIP again", func() (bool, string) {
		pid, err := vs.EnginePid()
		has, herr := h.HasAddr(vip)
		return err == nil && pid != agent && pid != vs.Pid() && herr == nil && has,
			fmt.Sprintf("agent pid %d (%v), VIP held %v (%v)", pid, err, has, herr)
	})
	if !vs.Alive() {
		t.Fatal("the supervisor died with its agent")
	}
}

// procKiB is a "Name: N kB" field of /proc/PID/status.
func procKiB(t *testing.T, pid int, field string) int {
	t.Helper()
	n, err := procfs.StatusKiB(pid, field)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

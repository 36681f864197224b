package engine_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestReloadRedefinedScriptKeepsFailing: a vipstack backup held under a
// keepalived master by a failing vrrp_script (100-30 = 70 < 90) reloads
// with the script redefined (another path, a slower check). keepalived
// 2.2.7 keeps a redefined script's state ("VRRP_Script(chk) considered
// unsuccessful on reload"), and so must vipstack: it stays at 70 while the
// new check's first run takes its 6 s, and the keepalived master keeps the
// VIP. vipstack started the new check as passing: at 100 it preempted the
// master within a skew time.
func TestReloadRedefinedScriptKeepsFailing(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vsBrs"})
	node, peer := topo.Hosts[0], topo.Hosts[1]
	vip := netip.MustParseAddr("198.18.0.100")
	dir := t.TempDir()
	fast, slow := filepath.Join(dir, "fast.sh"), filepath.Join(dir, "slow.sh")
	for path, body := range map[string]string{fast: "#!/bin/sh\nexit 1\n", slow: "#!/bin/sh\nsleep 6\nexit 1\n"} {
		if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	render := func(c peers.Conf, name string) string {
		t.Helper()
		text, err := c.Render(name)
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	base := peers.Conf{Version: 2, Interval: time.Second, VRID: 51, VIP: netip.PrefixFrom(vip, 32), Auth: "managed_api_vip"}
	ours, theirs := base, base
	ours.Priority, ours.Script, ours.Weight = 100, fast, -30
	theirs.Priority = 90

	n, err := peers.Start(node, peers.Vipstack, render(ours, "n1"), t.TempDir(), bin)
	if err != nil {
		t.Fatal(err)
	}
	logOnFailure(t, n)
	poll(t, 10*time.Second, "vipstack's check failing", func() (bool, error) {
		return strings.Contains(n.Log(), `msg="tracked script now failing" script=chk`), nil
	})
	k, err := peers.Start(peer, peers.Keepalived, render(theirs, "n2"), t.TempDir(), bin)
	if err != nil {
		t.Fatal(err)
	}
	logOnFailure(t, k)
	if _, err := peers.WaitSoleHolder(topo.Hosts, vip, peer, 3*time.Second, 20*time.Second); err != nil {
		t.Fatalf("keepalived at 90 over vipstack at 100-30: %v", err)
	}

	// The slower definition: its first result comes 6 s after the reload.
	ours.Script = slow
	text := mustReplace(t, render(ours, "n1"), "    interval 1\n", "    interval 10\n    timeout 8\n")
	if err := os.WriteFile(n.Conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := n.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// Over the new check's first run and past it, keepalived stays the
	// only holder.
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		hold, err := peers.Holders(topo.Hosts, vip)
		if err != nil {
			t.Fatal(err)
		}
		if len(hold) != 1 || hold[0] != peer {
			var names []string
			for _, h := range hold {
				names = append(names, h.Name)
			}
			t.Fatalf("after the reload the VIP is held by %v, want only keepalived's %s", names, peer.Name)
		}
		time.Sleep(20 * time.Millisecond) // sampling the system
	}
	if !strings.Contains(n.Log(), `msg="tracked script redefined; it keeps its state until the new definition's results change it" script=chk ok=false`) {
		t.Errorf("vipstack's log does not say the redefined check kept its failing state")
	}
}

// TestReloadWarnsUnsafeScript: a reload that points a vrrp_script at a
// world-writable script, without enable_script_security, logs the same
// "Unsafe permissions found for script" warning as a start with it does
// (the script still runs, as in keepalived). Before, only a start warned.
func TestReloadWarnsUnsafeScript(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vsUw"})
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	safe, open := filepath.Join(dir, "safe.sh"), filepath.Join(dir, "open.sh")
	for path, mode := range map[string]os.FileMode{safe: 0o755, open: 0o777} {
		if err := os.WriteFile(path, []byte("#!/bin/sh\nexit 0\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	conf := peers.Conf{Version: 2, Interval: time.Second, VRID: 51, Priority: 100,
		VIP: netip.PrefixFrom(netip.MustParseAddr("198.18.0.100"), 32), Script: safe, Weight: -30}
	render := func(c peers.Conf) string {
		t.Helper()
		text, err := c.Render("n1")
		if err != nil {
			t.Fatal(err)
		}
		return mustReplace(t, text, "    enable_script_security\n    script_user root\n", "")
	}
	n, err := peers.Start(topo.Hosts[0], peers.Vipstack, render(conf), t.TempDir(), bin)
	if err != nil {
		t.Fatal(err)
	}
	logOnFailure(t, n)
	poll(t, 10*time.Second, "the instance started", func() (bool, error) {
		return strings.Contains(n.Log(), `from=INIT to=BACKUP`), nil
	})
	if strings.Contains(n.Log(), "Unsafe permissions") {
		t.Fatalf("a warning at start for the safe script:\n%s", n.Log())
	}
	conf.Script = open
	if err := os.WriteFile(n.Conf, []byte(render(conf)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := n.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll(t, 10*time.Second, "the reload's warning about "+open, func() (bool, error) {
		for _, l := range strings.Split(n.Log(), "\n") {
			if strings.Contains(l, "Unsafe permissions found for script") && strings.Contains(l, "script="+open) && strings.Contains(l, "writable by others") {
				return true, nil
			}
		}
		return false, nil
	})
}

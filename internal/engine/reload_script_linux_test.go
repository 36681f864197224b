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

package engine_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestNotifyRunsAsItsUser: "notify_master SCRIPT USER GROUP" runs the
// script as that user and group, as keepalived does; the plain notify
// script, with no user, runs as script_user (root here).
func TestNotifyRunsAsItsUser(t *testing.T) {
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vkan"})
	dir, bin := t.TempDir(), t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil { // the script, as nobody, writes here
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(dir), bin} { // and reaches both directories
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(bin, "who.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$1 $(id -un) $(id -gn)\" >> "+dir+"/who.$1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	vip := netip.MustParseAddr("198.18.0.100")
	c := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 73, Priority: 100, VIP: netip.PrefixFrom(vip, 32)}
	text := withLines(t, c, topo.Hosts[0], `notify_master "`+script+` master" nobody nogroup`, `notify "`+script+` any"`)
	text = withGlobal(t, text, "enable_script_security", "script_user root")
	startText(t, topo.Hosts[0], peers.Vipstack, text)
	want := map[string]string{"master": "master nobody nogroup", "any": "any root root"}
	deadline := time.Now().Add(20 * time.Second)
	for which, line := range want {
		for {
			b, _ := os.ReadFile(filepath.Join(dir, "who."+which))
			if got := strings.TrimSpace(string(b)); got != "" {
				if first := strings.Split(got, "\n")[0]; first != line {
					t.Errorf("%s script ran as %q, want %q", which, first, line)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the %s notify script did not run", which)
			}
			time.Sleep(50 * time.Millisecond) // polling the file the script writes, bounded
		}
	}
}

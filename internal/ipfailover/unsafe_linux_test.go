package ipfailover

import (
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestUnsafeScriptsWarned: a world-writable OPENSHIFT_HA_CHECK_SCRIPT and
// a notify script writable by a non-root group run (the image's
// keepalived.conf sets no enable_script_security, and keepalived 2.2.7
// runs such scripts as root), with a warning naming each script and why,
// as keepalived logs "Unsafe permissions found for script 'PATH'.". The
// pool's engine is built from the same configuration as Pool.Run builds.
func TestUnsafeScriptsWarned(t *testing.T) {
	testnet.RequireRoot(t)
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name string, mode os.FileMode, gid int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, 0, gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	check, notify := write("check.sh", 0o777, 0), write("notify.sh", 0o775, 50)
	s := parseSpec(t, map[string]string{EnvVirtualIPs: "198.18.16.1-4", EnvCheckScript: check, EnvNotifyScript: notify, EnvCheckInterval: "1"})
	p := NewPlan(s, 3)
	if _, err := AssignVRIDs(p, s, nil, nil); err != nil {
		t.Fatal(err)
	}
	node := Node{Interface: "lo", Address: netip.MustParseAddr("198.18.0.11"), Version: 2, AdvertInterval: time.Second}
	cfg, err := p.Keepalived(s, node, nil, "ipfailover:test")
	if err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	if _, _, err := engine.New(engine.Options{Load: func() (*keepalived.Config, error) { return cfg, nil },
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	for _, want := range []struct{ path, why string }{
		{check, "is writable by others"},
		{notify, "is writable by group 50"},
	} {
		found := false
		for _, l := range strings.Split(out, "\n") {
			found = found || (strings.Contains(l, "level=WARN") && strings.Contains(l, "Unsafe permissions found for script") &&
				strings.Contains(l, "script="+want.path) && strings.Contains(l, want.why))
		}
		if !found {
			t.Errorf("no warning naming %s (%s) in the log:\n%s", want.path, want.why, out)
		}
	}
}

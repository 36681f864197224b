package engine

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
)

// unsafeScriptDir writes, in a root-owned 0755 directory, a script that
// is world-writable (ww), one writable by a non-root group (gw), one owned
// by a non-root user (nr) and a safe one (ok), each root-run by default.
func unsafeScriptDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []struct {
		name     string
		mode     os.FileMode
		uid, gid int
	}{
		{"ww.sh", 0o777, 0, 0},
		{"gw.sh", 0o775, 0, 50},
		{"nr.sh", 0o755, 65534, 65534},
		{"ok.sh", 0o755, 0, 0},
	} {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, f.uid, f.gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestUnsafeScriptsWarned: scripts run as root that a non-root user could
// change are logged by New with their path and the reason, as keepalived
// 2.2.7 logs "Unsafe permissions found for script 'PATH'." and runs them
// when enable_script_security is not set (with or without script_user
// root). With it they are refused (Check), so nothing is logged. Before,
// vipstack ran them without a word.
func TestUnsafeScriptsWarned(t *testing.T) {
	testnet.RequireRoot(t)
	dir := unsafeScriptDir(t)
	conf := func(globals string) string {
		return fmt.Sprintf(`global_defs {
%s
}
vrrp_script chk_ww {
    script "%[2]s/ww.sh"
    interval 1
}
vrrp_script chk_gw {
    script "%[2]s/gw.sh"
    interval 1
}
vrrp_script chk_ok {
    script "%[2]s/ok.sh"
    interval 1
}
vrrp_instance VI_1 {
    state BACKUP
    interface lo
    virtual_router_id 51
    priority 100
    advert_int 1
    virtual_ipaddress {
        198.18.7.100/32
    }
    track_script {
        chk_ww
        chk_gw
        chk_ok
    }
    notify "%[2]s/nr.sh"
}
`, globals, dir)
	}
	wantUnsafe := []string{
		"gw.sh: vrrp_script chk_gw (k.conf:6): " + dir + "/gw.sh is writable by group 50",
		"ww.sh: vrrp_script chk_ww (k.conf:2): " + dir + "/ww.sh is writable by others",
		"nr.sh: vrrp_instance VI_1 notify (k.conf:14): " + dir + "/nr.sh is owned by uid 65534",
	}
	for _, tc := range []struct {
		name    string
		globals string
		want    []string
	}{
		{name: "no script security", want: wantUnsafe},
		{name: "script_user root", globals: "    script_user root", want: wantUnsafe},
		{name: "enable_script_security", globals: "    enable_script_security\n    script_user root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := keepalived.Parse("k.conf", []byte(conf(tc.globals)), nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, u := range UnsafeScripts(cfg) {
				reason, _, _ := strings.Cut(u.Err.Err.Error(), " (mode")
				reason, _, _ = strings.Cut(reason, ", not root")
				got = append(got, filepath.Base(u.Err.Path)+": "+u.UsedBy+": "+reason)
			}
			// Positions depend on the globals' lines: compare names,
			// paths and reasons, and the count.
			norm := func(ss []string) []string {
				var out []string
				for _, s := range ss {
					head, rest, _ := strings.Cut(s, " (")
					_, tail, _ := strings.Cut(rest, "): ")
					out = append(out, head+": "+tail)
				}
				return out
			}
			if diff := cmp.Diff(norm(tc.want), norm(got)); diff != "" {
				t.Errorf("unsafe scripts (-want +got):\n%s", diff)
			}
			if len(tc.want) == 0 {
				return
			}
			var logs syncbuf.Buffer
			if _, _, err := New(Options{Load: func() (*keepalived.Config, error) { return cfg, nil },
				Logger: slog.New(slog.NewTextHandler(&logs, nil))}); err != nil {
				t.Fatal(err)
			}
			out := logs.String()
			for _, name := range []string{"ww.sh", "gw.sh", "nr.sh"} {
				line := ""
				for _, l := range strings.Split(out, "\n") {
					if strings.Contains(l, "script="+filepath.Join(dir, name)) {
						line = l
					}
				}
				if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "Unsafe permissions found for script") || !strings.Contains(line, "reason=") {
					t.Errorf("no warning naming %s and why in the log:\n%s", name, out)
				}
			}
			if strings.Contains(out, "ok.sh") {
				t.Errorf("the safe script was warned about:\n%s", out)
			}
		})
	}
}

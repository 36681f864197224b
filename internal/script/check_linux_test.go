package script

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// requireRoot skips tests that chown files or switch users.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: needs root to chown test files and run scripts as another user")
	}
}

// secureBase returns a fresh root-owned 0755 directory whose ancestors pass
// the enable_script_security test (t.TempDir is 0700 root under /tmp, 1777).
func secureBase(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	must(t, os.Chmod(base, 0o755))
	must(t, os.Chmod(filepath.Dir(base), 0o755))
	if err := walkSecure(base); err != nil {
		t.Skipf("skipping: the temp directory is not secure enough to test under (set TMPDIR): %v", err)
	}
	return base
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// writeScript writes an executable shell script at path, creating parents
// with mode 0755.
func writeScript(t *testing.T, path, body string) string {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(path), 0o755))
	must(t, os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	must(t, os.Chmod(path, 0o755)) // umask-proof
	return path
}

func TestCheck(t *testing.T) {
	requireRoot(t)
	const hint = "; " + insecureHint
	enforce := Security{Enforce: true, User: "root"}
	tests := []struct {
		name string
		sec  Security
		// setup builds the tree under base and returns argv[0].
		setup   func(t *testing.T, base string) string
		wantErr string // with $B for base and $S for argv[0]
	}{
		{
			name:  "secure path",
			sec:   enforce,
			setup: func(t *testing.T, b string) string { return writeScript(t, b+"/ok/run.sh", "exit 0") },
		},
		{
			name: "world-writable directory",
			sec:  enforce,
			setup: func(t *testing.T, b string) string {
				s := writeScript(t, b+"/bad/run.sh", "exit 0")
				must(t, os.Chmod(b+"/bad", 0o777))
				return s
			},
			wantErr: `script "$S": $B/bad is writable by others (mode 0777)` + hint,
		},
		{
			name: "world-writable directory allowed without enforce",
			sec:  Security{},
			setup: func(t *testing.T, b string) string {
				s := writeScript(t, b+"/bad/run.sh", "exit 0")
				must(t, os.Chmod(b+"/bad", 0o777))
				return s
			},
		},
		{
			name: "sticky world-writable directory is accepted like keepalived",
			sec:  enforce,
			setup: func(t *testing.T, b string) string {
				s := writeScript(t, b+"/tmp/run.sh", "exit 0")
				must(t, os.Chmod(b+"/tmp", os.ModeSticky|0o777))
				return s
			},
		},
		{
			name: "world-writable file in sticky directory",
			sec:  enforce,
			setup: func(t *testing.T, b string) string {
				s := writeScript(t, b+"/tmp/run.sh", "exit 0")
				must(t, os.Chmod(b+"/tmp", os.ModeSticky|0o777))
				must(t, os.Chmod(s, 0o757))
				return s
			},
			wantErr: `script "$S": $B/tmp/run.sh is writable by others (mode 0757)` + hint,
		},
		{
			name: "group-writable directory with a non-root group",
			sec:  enforce,
			setup: func(t *testing.T, b string) string {
				s := writeScript(t, b+"/grp/run.sh", "exit 0")
				must(t, os.Chown(b+"/grp", 0, 1234))
				must(t, os.Chmod(b+"/grp", 0o775))
				return s
			},
			wantErr: `script "$S": $B/grp is writable by group 1234 (mode 0775)` + hint,
		},
		{
			name: "group-writable by root's group is fine",
			sec:  enforce,
			setup: func(t *testing.T, b string) string {
				s := writeScript(t, b+"/grp/run.sh", "exit 0")
				must(t, os.Chmod(b+"/grp", 0o775))
				must(t, os.Chmod(s, 0o775))
				return s
			},
		},
		{
			name: "script owned by another user",
			sec:  enforce,
			setup: func(t *testing.T, b string) string {
				s := writeScript(t, b+"/own/run.sh", "exit 0")
				must(t, os.Chown(s, 65534, 0))
				return s
			},
			wantErr: `script "$S": $B/own/run.sh is owned by uid 65534, not root` + hint,
		},
		{
			name: "directory owned by another user",
			sec:  enforce,
			setup: func(t *testing.T, b string) string {
				s := writeScript(t, b+"/own/run.sh", "exit 0")
				must(t, os.Chown(b+"/own", 1000, 0))
				return s
			},
			wantErr: `script "$S": $B/own is owned by uid 1000, not root` + hint,
		},
		{
			name: "insecure path is not checked when the script runs as nobody",
			sec:  Security{Enforce: true, User: "nobody"},
			setup: func(t *testing.T, b string) string {
				s := writeScript(t, b+"/bad/run.sh", "exit 0")
				must(t, os.Chmod(b+"/bad", 0o777))
				return s
			},
		},
		{
			name: "gid 0 still needs the check",
			sec:  Security{Enforce: true, User: "nobody", Group: "root"},
			setup: func(t *testing.T, b string) string {
				s := writeScript(t, b+"/bad/run.sh", "exit 0")
				must(t, os.Chmod(b+"/bad", 0o777))
				return s
			},
			wantErr: `script "$S": $B/bad is writable by others (mode 0777)` + hint,
		},
		{
			name: "set-uid root script needs the check even as nobody",
			sec:  Security{Enforce: true, User: "nobody"},
			setup: func(t *testing.T, b string) string {
				s := writeScript(t, b+"/bad/run.sh", "exit 0")
				must(t, os.Chmod(s, os.ModeSetuid|0o755))
				must(t, os.Chmod(b+"/bad", 0o777))
				return s
			},
			wantErr: `script "$S": $B/bad is writable by others (mode 0777)` + hint,
		},
		{
			name: "symlink to a secure script",
			sec:  enforce,
			setup: func(t *testing.T, b string) string {
				writeScript(t, b+"/real/run.sh", "exit 0")
				must(t, os.Symlink("./real/../real/run.sh", b+"/link.sh"))
				return b + "/link.sh"
			},
		},
		{
			name: "symlinked directory leading into an insecure one",
			sec:  enforce,
			setup: func(t *testing.T, b string) string {
				writeScript(t, b+"/bad/inner/run.sh", "exit 0")
				must(t, os.Chmod(b+"/bad", 0o777))
				must(t, os.Symlink(b+"/bad/inner", b+"/dir"))
				return b + "/dir/run.sh"
			},
			wantErr: `script "$S": $B/bad is writable by others (mode 0777)` + hint,
		},
		{
			name: "symlink owned by another user",
			sec:  enforce,
			setup: func(t *testing.T, b string) string {
				s := writeScript(t, b+"/real/run.sh", "exit 0")
				must(t, os.Symlink(s, b+"/link.sh"))
				must(t, os.Lchown(b+"/link.sh", 65534, 65534))
				return b + "/link.sh"
			},
			wantErr: `script "$S": symlink $B/link.sh is owned by uid 65534, not root` + hint,
		},
		{
			name: "symlink loop",
			sec:  enforce,
			setup: func(t *testing.T, b string) string {
				must(t, os.Symlink("b", b+"/a"))
				must(t, os.Symlink("a", b+"/b"))
				return b + "/a"
			},
			wantErr: `script "$S": stat $B/a: too many levels of symbolic links`,
		},
		{
			name: "not executable",
			sec:  Security{},
			setup: func(t *testing.T, b string) string {
				s := writeScript(t, b+"/x/run.sh", "exit 0")
				must(t, os.Chmod(s, 0o644))
				return s
			},
			wantErr: `script "$S": $B/x/run.sh is not executable by uid:gid 0:0 (owner 0:0, mode 0644); keepalived disables such scripts`,
		},
		{
			name: "not executable by the script user",
			sec:  Security{User: "nobody"},
			setup: func(t *testing.T, b string) string {
				s := writeScript(t, b+"/x/run.sh", "exit 0")
				must(t, os.Chmod(s, 0o744))
				return s
			},
			wantErr: `script "$S": $B/x/run.sh is not executable by uid:gid 65534:65534 (owner 0:0, mode 0744); keepalived disables such scripts`,
		},
		{
			name:    "directory",
			sec:     Security{},
			setup:   func(t *testing.T, b string) string { return b },
			wantErr: `script "$S": $B is not a regular file (mode directory 0755)`,
		},
		{
			name:    "missing",
			sec:     enforce,
			setup:   func(t *testing.T, b string) string { return b + "/nope.sh" },
			wantErr: `script "$S": stat $B/nope.sh: no such file or directory`,
		},
		{
			name:  "bare name found in PATH",
			sec:   enforce,
			setup: func(t *testing.T, b string) string { return "sh" },
		},
		{
			name:    "bare name not in PATH",
			sec:     enforce,
			setup:   func(t *testing.T, b string) string { return "vipstack-no-such-script" },
			wantErr: `script "$S": not found in PATH "` + DefaultPath + `"; give the full path`,
		},
		{
			name:    "unknown user",
			sec:     Security{User: "vipstack-no-such-user"},
			setup:   func(t *testing.T, b string) string { return "/bin/true" },
			wantErr: `script "$S": script_user "vipstack-no-such-user": no such user; want an existing user name or uid`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := secureBase(t)
			s := tt.setup(t, base)
			err := tt.sec.Check([]string{s, "arg"})
			got := ""
			if err != nil {
				got = err.Error()
			}
			want := tt.wantErr
			if want != "" {
				want = expand(want, base, s)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Check (-want +got):\n%s", diff)
			}
		})
	}
}

func expand(s, base, script string) string {
	return os.Expand(s, func(k string) string {
		switch k {
		case "B":
			return base
		case "S":
			return script
		}
		return "$" + k
	})
}

func TestCheckMissingWrapsNotExist(t *testing.T) {
	err := Security{}.Check([]string{"/nonexistent/vipstack/x.sh"})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Check of a missing script = %v, want an error wrapping fs.ErrNotExist", err)
	}
}

func TestCheckEmpty(t *testing.T) {
	for _, argv := range [][]string{nil, {""}} {
		if err := (Security{}).Check(argv); err == nil {
			t.Errorf("Check(%q) = nil, want an error", argv)
		}
	}
}

func TestIdentity(t *testing.T) {
	cur := current()
	tests := []struct {
		name    string
		sec     Security
		want    Identity
		wantErr string
	}{
		{name: "nobody with primary group", sec: Security{User: "nobody"}, want: Identity{UID: 65534, GID: 65534, User: "nobody", Group: "nogroup"}},
		{name: "explicit group", sec: Security{User: "nobody", Group: "daemon"}, want: Identity{UID: 65534, GID: 1, User: "nobody", Group: "daemon"}},
		{name: "numeric user and group", sec: Security{User: "65534", Group: "4321"}, want: Identity{UID: 65534, GID: 4321, User: "nobody", Group: "4321"}},
		{name: "default without keepalived_script is the current user", sec: Security{}, want: cur},
		{name: "unknown user", sec: Security{User: "vipstack-nope"}, wantErr: `script_user "vipstack-nope": no such user; want an existing user name or uid`},
		{name: "unknown group", sec: Security{User: "nobody", Group: "vipstack-nope"}, wantErr: `script_user group "vipstack-nope": no such group; want an existing group name or gid`},
		{name: "group without user", sec: Security{Group: "daemon"}, wantErr: `script_user: group "daemon" given without a user; want script_user USERNAME [GROUPNAME]`},
		{name: "enable_script_security without script_user or keepalived_script", sec: Security{Enforce: true},
			wantErr: `enable_script_security is set, script_user is not, and user "keepalived_script" does not exist: keepalived runs no script then ` +
				"(its checks and notify scripts are dropped); want script_user USERNAME [GROUPNAME] in global_defs (e.g. `script_user root`, with root-owned scripts) or a keepalived_script user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.sec.User == "" && tt.sec.Group == "" {
				if _, err := (Security{User: DefaultUser}).Identity(); err == nil {
					t.Skipf("user %s exists on this machine", DefaultUser)
				}
			}
			if tt.sec.User == "nobody" || tt.sec.User == "65534" {
				if _, err := (Security{User: "nobody"}).Identity(); err != nil {
					t.Skip("no user nobody on this machine")
				}
			}
			got, err := tt.sec.Identity()
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tt.wantErr, gotErr); diff != "" {
				t.Fatalf("Identity error (-want +got):\n%s", diff)
			}
			if tt.wantErr != "" {
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Identity (-want +got):\n%s", diff)
			}
		})
	}
}

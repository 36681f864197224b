package script

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestEnforceRulesThroughRun checks each enable_script_security rule the
// way the engine meets it, through Runner.Run of a script run as root:
// every element from / down to the script (not only its own directory)
// must be owned by root and not writable by a non-root group or by others.
// A refused script must not run, and the error names the offending path,
// its owner or mode, and the rule. The accepted cases are the control: the
// same tree with the one bad bit fixed runs.
func TestEnforceRulesThroughRun(t *testing.T) {
	requireRoot(t)
	const hint = "; " + insecureHint
	tests := []struct {
		name string
		// setup builds base/a/b/run.sh (a script touching $1) and breaks
		// at most one rule.
		setup   func(t *testing.T, b, script string)
		wantErr string // $B for base, $S for the script
	}{
		{
			name:  "all root-owned, 0755 directories, 0755 script",
			setup: func(t *testing.T, b, s string) {},
		},
		{
			name:  "script group-owned by a non-root group without group write",
			setup: func(t *testing.T, b, s string) { must(t, os.Chown(s, 0, 1234)) },
		},
		{
			name:  "directory group-owned by a non-root group without group write",
			setup: func(t *testing.T, b, s string) { must(t, os.Chown(b+"/a", 0, 1234)) },
		},
		{
			name: "script writable by others",
			setup: func(t *testing.T, b, s string) {
				must(t, os.Chmod(s, 0o757))
			},
			wantErr: `script "$S": $S is writable by others (mode 0757)` + hint,
		},
		{
			name: "script writable by its non-root group",
			setup: func(t *testing.T, b, s string) {
				must(t, os.Chown(s, 0, 1234))
				must(t, os.Chmod(s, 0o775))
			},
			wantErr: `script "$S": $S is writable by group 1234 (mode 0775)` + hint,
		},
		{
			name:    "script owned by a non-root user",
			setup:   func(t *testing.T, b, s string) { must(t, os.Chown(s, 1000, 0)) },
			wantErr: `script "$S": $S is owned by uid 1000, not root` + hint,
		},
		{
			name:    "grandparent directory writable by others",
			setup:   func(t *testing.T, b, s string) { must(t, os.Chmod(b+"/a", 0o777)) },
			wantErr: `script "$S": $B/a is writable by others (mode 0777)` + hint,
		},
		{
			name: "grandparent directory writable by its non-root group",
			setup: func(t *testing.T, b, s string) {
				must(t, os.Chown(b+"/a", 0, 1234))
				must(t, os.Chmod(b+"/a", 0o775))
			},
			wantErr: `script "$S": $B/a is writable by group 1234 (mode 0775)` + hint,
		},
		{
			name:    "grandparent directory owned by a non-root user",
			setup:   func(t *testing.T, b, s string) { must(t, os.Chown(b+"/a", 1000, 1000)) },
			wantErr: `script "$S": $B/a is owned by uid 1000, not root` + hint,
		},
		{
			name:    "base directory (top of the tree) owned by a non-root user",
			setup:   func(t *testing.T, b, s string) { must(t, os.Chown(b, 65534, 0)) },
			wantErr: `script "$S": $B is owned by uid 65534, not root` + hint,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := secureBase(t)
			s := writeScript(t, base+"/a/b/run.sh", `touch "$1"`)
			// The marker lives outside the tree under test.
			marker := filepath.Join(t.TempDir(), "ran")
			tt.setup(t, base, s)
			got := Runner{Security: Security{Enforce: true, User: "root"}}.Run(context.Background(), []string{s, marker}, time.Minute, nil)
			_, statErr := os.Stat(marker)
			if tt.wantErr == "" {
				if !got.OK() || statErr != nil {
					t.Fatalf("Run = %+v (marker: %v), want the script to run", got, statErr)
				}
				return
			}
			want := Result{ExitCode: -1, Err: errorString(expand(tt.wantErr, base, s))}
			if diff := cmp.Diff(want, got, cmp.Comparer(errorText)); diff != "" {
				t.Errorf("Run (-want +got):\n%s", diff)
			}
			if statErr == nil {
				t.Error("the refused script ran")
			}
		})
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

// TestScriptUserIdentity runs a script of our own, not a system binary, as
// script_user [group] and reads back the identity it ran with, through Run
// (vrrp_script, MISC_CHECK) and through Notify (notify scripts, which are
// not waited for). Under enable_script_security the root-owned script
// passes the path check as well.
func TestScriptUserIdentity(t *testing.T) {
	requireRoot(t)
	base := secureBase(t)
	s := writeScript(t, base+"/bin/whoami.sh", `id -u; id -g; id -G`)
	notify := writeScript(t, base+"/bin/notify.sh", `f=$1; { id -u; id -g; id -G; } > "$f.tmp"; mv "$f.tmp" "$f"`)
	// Notify output goes to a directory any uid may write to.
	outDir := t.TempDir()
	must(t, os.Chmod(outDir, 0o777))
	must(t, os.Chmod(filepath.Dir(outDir), 0o755))
	tests := []struct {
		name string
		sec  Security
		want string // id -u, id -g, id -G
	}{
		{name: "script_user nobody", sec: Security{Enforce: true, User: "nobody"}, want: "65534\n65534\n65534\n"},
		{name: "script_user nobody daemon", sec: Security{Enforce: true, User: "nobody", Group: "daemon"}, want: "65534\n1\n1\n"},
		{name: "numeric script_user", sec: Security{Enforce: true, User: "65534", Group: "4321"}, want: "65534\n4321\n4321\n"},
		{name: "script_user root", sec: Security{Enforce: true, User: "root"}, want: "0\n0\n0\n"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Runner{Security: tt.sec}
			got := r.Run(context.Background(), []string{s}, time.Minute, nil)
			if diff := cmp.Diff(Result{Output: tt.want}, got, cmp.Comparer(errorText)); diff != "" {
				t.Errorf("Run as %+v (-want +got):\n%s", tt.sec, diff)
			}
			out := filepath.Join(outDir, strings.Repeat("n", i+1))
			if err := r.Notify([]string{notify, out}); err != nil {
				t.Fatal(err)
			}
			var b []byte
			for end := time.Now().Add(pollBound); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
				if b, _ = os.ReadFile(out); b != nil {
					break
				}
			}
			if diff := cmp.Diff(tt.want, string(b)); diff != "" {
				t.Errorf("Notify as %+v: identity (-want +got):\n%s", tt.sec, diff)
			}
		})
	}
}

// capsChildEnv marks the copy of the test binary that
// TestScriptUserWithoutSetuidCaps runs under capsh.
const capsChildEnv = "VIPSTACK_SCRIPT_TEST_CAPS_CHILD"

// TestScriptUserWithoutSetuidCaps runs the test binary again under capsh
// with only NET_ADMIN, NET_RAW and NET_BIND_SERVICE, the capabilities the
// VRRP engine needs (docs/security.md). There a script whose script_user
// is vipstack's own user still runs, while one for another user is refused
// with an error that names the missing CAP_SETUID and CAP_SETGID and the
// way out, instead of a bare "operation not permitted".
func TestScriptUserWithoutSetuidCaps(t *testing.T) {
	if os.Getenv(capsChildEnv) == "1" {
		got := Runner{Security: Security{User: "root"}}.Run(context.Background(), []string{"/usr/bin/id", "-u"}, time.Minute, nil)
		if diff := cmp.Diff(Result{Output: "0\n"}, got, cmp.Comparer(errorText)); diff != "" {
			t.Errorf("Run as vipstack's own user without CAP_SETUID (-want +got):\n%s", diff)
		}
		want := `script "/usr/bin/id": start as script_user uid:gid 65534:65534: fork/exec /usr/bin/id: operation not permitted; ` +
			`switching to another user needs CAP_SETUID and CAP_SETGID: grant them, or set script_user to the user vipstack runs as`
		got = Runner{Security: Security{User: "nobody"}}.Run(context.Background(), []string{"/usr/bin/id", "-u"}, time.Minute, nil)
		if diff := cmp.Diff(Result{ExitCode: -1, Err: errorString(want)}, got, cmp.Comparer(errorText)); diff != "" {
			t.Errorf("Run as nobody without CAP_SETUID (-want +got):\n%s", diff)
		}
		if err := (Runner{Security: Security{User: "nobody"}}).Notify([]string{"/usr/bin/id"}); err == nil || !strings.Contains(err.Error(), "needs CAP_SETUID and CAP_SETGID") {
			t.Errorf("Notify as nobody without CAP_SETUID: %v, want the missing capabilities named", err)
		}
		return
	}
	requireRoot(t)
	capsh, err := exec.LookPath("capsh")
	if err != nil {
		t.Skip("skipping: capsh is not installed (Debian package libcap2-bin)")
	}
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		t.Fatal(err)
	}
	last, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	var drop []string
	for c := 0; c <= last; c++ {
		if c != 10 && c != 12 && c != 13 { // NET_BIND_SERVICE, NET_ADMIN, NET_RAW
			drop = append(drop, strconv.Itoa(c))
		}
	}
	const keep = "cap_net_admin,cap_net_raw,cap_net_bind_service"
	cmd := exec.Command(capsh, "--drop="+strings.Join(drop, ","), "--caps="+keep+"+eip", "--addamb="+keep,
		"--", "-c", `exec "$0" "$@"`, os.Args[0], "-test.run=^TestScriptUserWithoutSetuidCaps$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), capsChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestScriptUserWithoutSetuidCaps") {
		t.Fatalf("the test under capsh (%v):\n%s", err, out)
	}
}

package script

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// pollBound caps the loops below that wait for a real process to do
// something (write a file, die). They wait on the process, not on a timer.
const pollBound = 10 * time.Second

func TestRun(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		argv []string
		env  []string
		want Result
	}{
		{name: "exit 0", argv: []string{writeScript(t, dir+"/ok.sh", "exit 0")}, want: Result{ExitCode: 0}},
		{name: "exit 1 with output", argv: []string{writeScript(t, dir+"/fail.sh", "echo out; echo err >&2; exit 1")}, want: Result{ExitCode: 1, Output: "out\nerr\n"}},
		{name: "arguments without a shell", argv: []string{"/bin/echo", "$HOME", "a b", "*"}, want: Result{ExitCode: 0, Output: "$HOME a b *\n"}},
		{name: "minimal environment", argv: []string{"/usr/bin/env"}, env: []string{"VIP=1"}, want: Result{Output: "PATH=" + DefaultPath + "\nVIP=1\n"}},
		{name: "caller PATH overrides and finds bare names", argv: []string{"ok.sh"}, env: []string{"PATH=" + dir}, want: Result{ExitCode: 0}},
		{name: "stdin is /dev/null", argv: []string{"/bin/readlink", "/proc/self/fd/0"}, want: Result{Output: "/dev/null\n"}},
		{name: "working directory is /", argv: []string{"/bin/pwd"}, want: Result{Output: "/\n"}},
		{name: "killed by a signal", argv: []string{writeScript(t, dir+"/sig.sh", "kill -KILL $$")}, want: Result{ExitCode: -1, Signal: "killed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Runner{}.Run(context.Background(), tt.argv, time.Minute, tt.env)
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(errorText)); diff != "" {
				t.Errorf("Run(%q) (-want +got):\n%s", tt.argv, diff)
			}
		})
	}
}

func errorText(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Error() == b.Error()
}

func TestRunOutputIsCapped(t *testing.T) {
	s := writeScript(t, t.TempDir()+"/loud.sh", "head -c 100000 /dev/zero | tr '\\0' x; exit 3")
	got := Runner{}.Run(context.Background(), []string{s}, time.Minute, nil)
	if got.ExitCode != 3 || got.Err != nil {
		t.Fatalf("Run = %+v, want exit 3: a script writing more than the cap must not block", got)
	}
	if want := strings.Repeat("x", OutputLimit); got.Output != want {
		t.Errorf("Output has %d bytes, want the first %d", len(got.Output), OutputLimit)
	}
}

func TestRunErrors(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		argv    []string
		wantErr string
	}{
		{name: "missing", ctx: context.Background(), argv: []string{"/nonexistent/x.sh"}, wantErr: `script "/nonexistent/x.sh": stat /nonexistent/x.sh: no such file or directory`},
		{name: "empty", ctx: context.Background(), argv: nil, wantErr: "script: empty command; want a program path and optional arguments"},
		{name: "cancelled before start", ctx: cancelled, argv: []string{"/bin/true"}, wantErr: `script "/bin/true": start: context canceled`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Runner{}.Run(tt.ctx, tt.argv, time.Minute, nil)
			want := Result{ExitCode: -1, Err: errors.New(tt.wantErr)}
			if diff := cmp.Diff(want, got, cmp.Comparer(errorText)); diff != "" {
				t.Errorf("Run (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRunTimeoutKillsProcessGroup runs scripts that outlive their timeout
// after starting a background child, and checks that Run reports the
// timeout and that the child is gone too.
func TestRunTimeoutKillsProcessGroup(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		grace      time.Duration
		wantSignal string
	}{
		{
			name:       "dies on SIGTERM",
			body:       `sleep 30 & echo $! > "$1"; sleep 30`,
			wantSignal: "terminated",
		},
		{
			// SIGTERM is ignored by the script and, inherited, by its
			// children: only SIGKILL after the grace gets rid of them.
			name:       "ignores SIGTERM",
			body:       `trap '' TERM; sleep 30 & echo $! > "$1"; while :; do sleep 1; done`,
			grace:      50 * time.Millisecond,
			wantSignal: "killed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := writeScript(t, dir+"/slow.sh", tt.body)
			pidFile := filepath.Join(dir, "child.pid")
			got := Runner{KillGrace: tt.grace}.Run(context.Background(), []string{s, pidFile}, time.Second, nil)
			want := Result{ExitCode: -1, Signal: tt.wantSignal, TimedOut: true}
			if diff := cmp.Diff(want, got, cmp.Comparer(errorText)); diff != "" {
				t.Errorf("Run (-want +got):\n%s", diff)
			}
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatalf("the script did not record its child's pid within its 1s timeout: %v", err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("pid file %q: %v", b, err)
			}
			waitGone(t, pid)
		})
	}
}

// waitGone waits until pid no longer runs: it is gone, or a zombie waiting
// for init to reap it (the script, its parent, is dead).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for end := time.Now().Add(pollBound); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		// Field 3, after "(comm)", is the state.
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && strings.HasPrefix(string(stat[i:]), ") Z") {
			return
		}
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("background child %d of the timed-out script is still running: its process group was not killed", pid)
}

func TestRunAsUser(t *testing.T) {
	requireRoot(t)
	tests := []struct {
		name string
		sec  Security
		argv []string
		want string
	}{
		{name: "uid", sec: Security{User: "nobody"}, argv: []string{"/usr/bin/id", "-u"}, want: "65534\n"},
		{name: "primary gid", sec: Security{User: "nobody"}, argv: []string{"/usr/bin/id", "-g"}, want: "65534\n"},
		{name: "no supplementary groups", sec: Security{User: "nobody"}, argv: []string{"/usr/bin/id", "-G"}, want: "65534\n"},
		{name: "explicit group", sec: Security{User: "nobody", Group: "daemon"}, argv: []string{"/usr/bin/id", "-g"}, want: "1\n"},
		{name: "enforce allows root-owned /usr/bin", sec: Security{Enforce: true, User: "nobody"}, argv: []string{"/usr/bin/id", "-u"}, want: "65534\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Runner{Security: tt.sec}.Run(context.Background(), tt.argv, time.Minute, nil)
			if diff := cmp.Diff(Result{Output: tt.want}, got, cmp.Comparer(errorText)); diff != "" {
				t.Errorf("Run(%q) as %+v (-want +got):\n%s", tt.argv, tt.sec, diff)
			}
		})
	}
}

func TestRunRefusesInsecureScript(t *testing.T) {
	requireRoot(t)
	base := secureBase(t)
	marker := filepath.Join(base, "ran")
	s := writeScript(t, base+"/bad/run.sh", `touch "$1"`)
	must(t, os.Chmod(base+"/bad", 0o777))

	got := Runner{Security: Security{Enforce: true, User: "root"}}.Run(context.Background(), []string{s, marker}, time.Minute, nil)
	wantErr := `script "` + s + `": ` + base + `/bad is writable by others (mode 0777); ` + insecureHint
	if diff := cmp.Diff(Result{ExitCode: -1, Err: errors.New(wantErr)}, got, cmp.Comparer(errorText)); diff != "" {
		t.Errorf("Run (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the insecure script ran")
	}
	if err := (Runner{Security: Security{Enforce: true, User: "root"}}).Notify([]string{s, marker}); err == nil || err.Error() != wantErr {
		t.Errorf("Notify error = %v, want %s", err, wantErr)
	}

	// Without enable_script_security keepalived runs it anyway.
	if got := (Runner{}).Run(context.Background(), []string{s, marker}, time.Minute, nil); !got.OK() {
		t.Fatalf("Run without Enforce = %+v, want success", got)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the script did not run without Enforce: %v", err)
	}
}

func TestNotifyPassesExtraArgs(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "args")
	// Write to a temporary name then rename, so the poll below never reads
	// a half-written file.
	s := writeScript(t, dir+"/notify.sh", `f=$1; shift; printf '%s|' "$@" > "$f.tmp"; mv "$f.tmp" "$f"`)

	if err := (Runner{}).Notify([]string{s, out, "conf arg"}, "INSTANCE", "VI_1", "MASTER", "100"); err != nil {
		t.Fatal(err)
	}
	var got []byte
	for end := time.Now().Add(pollBound); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(out); err == nil {
			got = b
			break
		}
	}
	if diff := cmp.Diff("conf arg|INSTANCE|VI_1|MASTER|100|", string(got)); diff != "" {
		t.Errorf("notify script arguments (-want +got):\n%s", diff)
	}
}

func TestNotifyStartError(t *testing.T) {
	err := (Runner{}).Notify([]string{"/nonexistent/notify.sh"}, "INSTANCE")
	if want := `script "/nonexistent/notify.sh": stat /nonexistent/notify.sh: no such file or directory`; err == nil || err.Error() != want {
		t.Errorf("Notify error = %v, want %s", err, want)
	}
}

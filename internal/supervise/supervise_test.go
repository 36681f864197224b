package supervise

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDescribe checks how a dead child's status is logged: a signal by its
// name, an exit by its code.
func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		want   string
	}{
		{name: "SIGKILL", script: "kill -KILL $$", want: "killed by SIGKILL"},
		{name: "SIGSEGV", script: "kill -SEGV $$", want: "killed by SIGSEGV"},
		{name: "exit 3", script: "exit 3", want: "exit status 3"},
		{name: "SIGRTMIN", script: "kill -RTMIN $$", want: "killed by signal 34"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("/bin/sh", "-c", tc.script)
			err := cmd.Run()
			if got := describe(cmd.ProcessState, nil); got != tc.want {
				t.Fatalf("describe(%v) = %q, want %q", err, got, tc.want)
			}
		})
	}
}

// TestSpecLogger: the small supervisor logs in the format, at the level and
// with the attributes of the command that started it, and refuses what
// that command's flags would refuse.
func TestSpecLogger(t *testing.T) {
	for _, tc := range []struct {
		name    string
		spec    Spec
		want    string // what an Info and a Debug line print
		wantErr string
	}{
		{name: "text", spec: Spec{LogFormat: "text", LogLevel: "info", LogAttrs: []string{"node", "m0"}},
			want: `level=INFO msg="supervisor: engine started" node=m0 pid=7` + "\n"},
		{name: "json at debug", spec: Spec{LogFormat: "json", LogLevel: "DEBUG"},
			want: `"level":"INFO","msg":"supervisor: engine started","pid":7}` + "\n" + `"level":"DEBUG","msg":"d"}` + "\n"},
		{name: "bad level", spec: Spec{LogFormat: "text", LogLevel: "loud"}, wantErr: `log level "loud": want debug, info, warn or error`},
		{name: "bad format", spec: Spec{LogFormat: "xml", LogLevel: "info"}, wantErr: `log format "xml": want text or json`},
		{name: "odd attributes", spec: Spec{LogFormat: "text", LogLevel: "info", LogAttrs: []string{"node"}}, wantErr: "want key, value pairs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			log, err := tc.spec.logger(&b)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("logger() error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			log.Info("supervisor: engine started", "pid", 7)
			log.Debug("d")
			// Drop each line's time.
			var got strings.Builder
			for _, l := range strings.SplitAfter(b.String(), "\n") {
				if _, rest, ok := strings.Cut(l, " "); ok && strings.HasPrefix(l, "time=") {
					l = rest
				} else if _, rest, ok := strings.Cut(l, `",`); ok && strings.HasPrefix(l, `{"time"`) {
					l = rest
				}
				got.WriteString(l)
			}
			if got.String() != tc.want {
				t.Fatalf("logged:\n%s\nwant:\n%s", got.String(), tc.want)
			}
		})
	}
}

// TestWithEnv: a variable set for a child replaces the supervisor's own
// (a process reads the first of two), and the rest stays in order.
func TestWithEnv(t *testing.T) {
	got := withEnv([]string{"A=1", "GOGC=off", "B=x=y", "GOGCX=2", "EMPTY="}, "GOGC=50", "C=3")
	want := []string{"A=1", "B=x=y", "GOGCX=2", "EMPTY=", "GOGC=50", "C=3"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("withEnv = %q, want %q", got, want)
	}
}

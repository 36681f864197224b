package supervise

import (
	"os/exec"
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := exec.Command("/bin/sh", "-c", tc.script).Run()
			if got := describe(err); got != tc.want {
				t.Fatalf("describe(%v) = %q, want %q", err, got, tc.want)
			}
		})
	}
}

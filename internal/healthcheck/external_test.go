package healthcheck

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestExternal(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	envOut := filepath.Join(dir, "env.out")
	script("ok", "exit 0")
	script("three", "exit 3")
	script("killed", "kill -KILL $$")
	script("env", `{ echo "$0 $*"; echo "PATH=$PATH HAPROXY_X=$HAPROXY_X HOME=$HOME"; } > `+envOut)
	script("slow", "exec /bin/sleep 10")
	env := func() []string { return []string{"PATH=/nonexistent:" + dir, "HAPROXY_X=1"} }
	tests := []struct {
		name    string
		command string
		timeout time.Duration
		want    Result
	}{
		{name: "exit 0 passes", command: "ok", want: Result{OK: true, Status: PROCOK}},
		{name: "another status fails", command: "three", want: Result{Status: PROCERR, Code: 3}},
		{name: "a signal fails with code -1", command: "killed", want: Result{Status: PROCERR, Code: -1}},
		{name: "an absolute command", command: filepath.Join(dir, "ok"), want: Result{OK: true, Status: PROCOK}},
		{name: "not found in PATH", command: "nosuch", want: Result{Status: PROCERR, Code: 255}},
		{name: "past the timeout", command: "slow", timeout: 50 * time.Millisecond, want: Result{Status: PROCTOUT}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			got := External{Command: tt.command, Args: []string{"a", "b"}, Env: env}.Probe(ctx)
			got.Info, got.Duration = "", 0
			if got != tt.want {
				t.Errorf("Probe = %+v, want %+v", got, tt.want)
			}
		})
	}
	t.Run("arguments and only the given environment", func(t *testing.T) {
		t.Setenv("HOME", "/should/not/pass")
		if r := (External{Command: "env", Args: []string{"198.18.0.1", "80"}, Env: env}).Probe(context.Background()); !r.OK {
			t.Fatalf("Probe = %+v", r)
		}
		b, err := os.ReadFile(envOut)
		if err != nil {
			t.Fatal(err)
		}
		// $0 is the file the kernel ran, as execvp found it.
		want := filepath.Join(dir, "env") + " 198.18.0.1 80\nPATH=/nonexistent:" + dir + " HAPROXY_X=1 HOME=\n"
		if got := string(b); got != want {
			t.Errorf("the command saw %q, want %q", got, want)
		}
	})
	if !strings.Contains(Description(PROCTOUT), "External check timeout") {
		t.Errorf("Description(PROCTOUT) = %q", Description(PROCTOUT))
	}
}

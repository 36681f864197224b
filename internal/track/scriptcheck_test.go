package track

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vipstack/vipstack/internal/script"
)

func TestScriptCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil || os.Chmod(p, 0o755) != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write("ok.sh", "exit 0")
	bad := write("bad.sh", "echo 'haproxy not running'; echo more; exit 3")
	slow := write("slow.sh", "exec sleep 30")
	tests := []struct {
		name    string
		check   ScriptCheck
		wantErr string
	}{
		{name: "exit 0", check: ScriptCheck{Argv: []string{ok}, Timeout: time.Minute}},
		{name: "exit 3", check: ScriptCheck{Argv: []string{bad}, Timeout: time.Minute}, wantErr: `script "` + bad + `": exit status 3 (output: "haproxy not running")`},
		{name: "timeout", check: ScriptCheck{Argv: []string{slow}, Timeout: 50 * time.Millisecond}, wantErr: `script "` + slow + `" timed out after 50ms`},
		{name: "missing", check: ScriptCheck{Argv: []string{dir + "/nope"}}, wantErr: `script "` + dir + `/nope": stat ` + dir + `/nope: no such file or directory`},
		{name: "unknown script user", check: ScriptCheck{Runner: script.Runner{Security: script.Security{User: "vipstack-no-such-user"}}, Argv: []string{ok}},
			wantErr: `script "` + ok + `": script_user "vipstack-no-such-user": no such user; want an existing user name or uid`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := tt.check.Probe(context.Background()); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tt.wantErr, got); diff != "" {
				t.Errorf("Probe (-want +got):\n%s", diff)
			}
		})
	}
}

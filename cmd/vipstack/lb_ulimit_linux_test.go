package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLBUlimitN: global ulimit-n sets the process's open file limit to
// that number, soft and hard, as haproxy does (without it, vipstack lb
// raises the soft limit to the hard one).
func TestLBUlimitN(t *testing.T) {
	ports := freePorts(t, 1)
	dir := t.TempDir()
	path := filepath.Join(dir, "haproxy.cfg")
	conf := fmt.Sprintf("global\n  ulimit-n 4321\ndefaults\n  mode tcp\n  timeout connect 1s\n  timeout client 1s\n  timeout server 1s\n"+
		"frontend fe\n  bind 127.0.0.1:%d\n  default_backend be\nbackend be\n  server a 127.0.0.1:1\n", ports[0])
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, out := startLBProcess(t, path)
	waitFor(t, "the start to end", func() bool { return strings.Contains(out.String(), "vipstack lb running") })
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Max open files") {
			line = strings.Join(strings.Fields(l), " ")
		}
	}
	if line != "Max open files 4321 4321 files" {
		t.Errorf("limits: %q, want soft and hard 4321", line)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
}

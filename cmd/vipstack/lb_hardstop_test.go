package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLBHardStopAfter: with global hard-stop-after, SIGUSR1's soft stop
// closes the connections still open after that time and vipstack lb
// exits, as haproxy does; without it, they would run to their end
// (TestLBSoftStop).
func TestLBHardStopAfter(t *testing.T) {
	m0 := nameServer(t, "m0")
	ports := freePorts(t, 1)
	dir := t.TempDir()
	path := filepath.Join(dir, "haproxy.cfg")
	cfg := fmt.Sprintf(`global
  hard-stop-after 300ms
defaults
  mode tcp
  timeout connect 5s
  timeout client 1m
  timeout server 1m
frontend main
  bind 127.0.0.1:%d
  default_backend masters
backend masters
  server m 127.0.0.1:%d
`, ports[0], m0)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	run := startRunLB(t, "-f", path, "--watch-interval", "0", "--drain-timeout", "1m")
	long := dialFrontend(t, fmt.Sprintf("127.0.0.1:%d", ports[0]))
	defer long.Close()
	long.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(long)
	if g, _ := r.ReadString('\n'); g != "m0\n" {
		t.Fatalf("greeted by %q, want m0", g)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadByte(); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Fatalf("the open connection was not closed after hard-stop-after: %v", err)
	}
	select {
	case <-run.done:
	case <-time.After(10 * time.Second): // a bound on a hang, never a timing
		t.Fatalf("vipstack lb did not exit after hard-stop-after; stderr:\n%s", run.stderr.String())
	}
	if !strings.Contains(run.stderr.String(), "hard-stop-after") {
		t.Errorf("log lacks the hard stop:\n%s", run.stderr.String())
	}
}

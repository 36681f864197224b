package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLBSoftStop: SIGUSR1 is haproxy's soft stop. The frontend stops
// accepting, an open connection keeps being served, and haproxy's "Proxy
// NAME stopped (cumulated conns: ...)" lines go to the log targets (level
// warning, <132> on local0; measured with haproxy 2.6.12 on SIGUSR1; the
// target takes notice and above, leaving the connection line out).
// A SIGTERM (here: main's context) then gives the connection
// --drain-timeout.
func TestLBSoftStop(t *testing.T) {
	m0 := nameServer(t, "m0")
	ports := freePorts(t, 1)
	dir := t.TempDir()
	sock := filepath.Join(dir, "log.sock")
	logs, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	path := filepath.Join(dir, "haproxy.cfg")
	cfg := fmt.Sprintf(`defaults
  mode tcp
  log %s local0 notice
  timeout connect 5s
  timeout client 1m
  timeout server 1m
frontend main
  bind 127.0.0.1:%d
  default_backend masters
backend masters
  server m 127.0.0.1:%d
`, sock, ports[0], m0)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	run := startRunLB(t, "-f", path, "--watch-interval", "0", "--drain-timeout", "100ms")
	stderr, done := &run.stderr, run.done
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
	want := map[string]bool{
		"Proxy main stopped (cumulated conns: FE: 1, BE: 0).\n":    true,
		"Proxy masters stopped (cumulated conns: FE: 0, BE: 1).\n": true,
	}
	buf := make([]byte, 2048)
	logs.SetReadDeadline(time.Now().Add(10 * time.Second))
	for len(want) > 0 {
		n, err := logs.Read(buf)
		if err != nil {
			t.Fatalf("log socket: %v; still waiting for %v; stderr:\n%s", err, want, stderr.String())
		}
		d := string(buf[:n])
		_, msg, _ := strings.Cut(d, "]: ")
		if !strings.HasPrefix(d, "<132>") || !want[msg] {
			t.Fatalf("unexpected datagram %q (want <132> and one of %v)", d, want)
		}
		delete(want, msg)
	}
	waitFor(t, "the frontend to refuse", func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0]))
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
	io.WriteString(long, "still here\n")
	if line, err := r.ReadString('\n'); err != nil || line != "still here\n" {
		t.Fatalf("the open connection after SIGUSR1: %q, %v", line, err)
	}
	select {
	case code := <-done:
		t.Fatalf("runLB returned %d with a connection open; stderr:\n%s", code, stderr.String())
	default:
	}

	run.stop(t) // SIGTERM: the connection gets --drain-timeout
	for _, want := range []string{"soft stop (SIGUSR1)", "draining", "drain timed out", "vipstack lb stopped"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, stderr.String())
		}
	}
}

package testutil

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb\nc", 5, "a\nb\nc"},
		{"", 3, ""},
		{"a\nb\n\n", 1, "b"},
	} {
		if got := Tail(tc.in, tc.n); got != tc.want {
			t.Errorf("Tail(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// TestPoll: Poll returns once f succeeds, and f's last error with the
// time waited when it never does or the context ends.
func TestPoll(t *testing.T) {
	n := 0
	if err := Poll(5*time.Second, func() error {
		if n++; n < 3 {
			return fmt.Errorf("try %d", n)
		}
		return nil
	}); err != nil || n != 3 {
		t.Fatalf("Poll = %v after %d calls, want nil after 3", err, n)
	}
	err := Poll(3*Interval, func() error { return errors.New("never") })
	if err == nil || !strings.Contains(err.Error(), "never") || !strings.Contains(err.Error(), "after 60ms") {
		t.Fatalf("Poll of a condition that never holds = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	if err := PollEvery(ctx, time.Hour, time.Hour, func() error { calls++; return errors.New("no") }); err == nil || calls != 1 {
		t.Fatalf("PollEvery with an ended context = %v after %d calls, want an error after 1", err, calls)
	}
}

// TestGoroutines: the goroutines of a real SIGQUIT dump that name the
// package, with their headers and functions only.
func TestGoroutines(t *testing.T) {
	log := `time=x level=INFO msg="serving"
SIGQUIT: quit
PC=0x40816e m=0 sigcode=0

goroutine 0 gp=0x5471c0 m=0 mp=0x547f80 [idle]:
runtime.netpoll(0x3db41d9ff570?)
	/usr/local/go/src/runtime/netpoll_epoll.go:119 +0xd4 fp=0x7ffe38f54c90 sp=0x7ffe38f54600 pc=0x440954

goroutine 7 gp=0xc000102000 m=nil [chan receive, 2 minutes]:
github.com/osrg/gobgp/v3/pkg/server.(*BgpServer).mgmtOperation.func1()
	/go/pkg/mod/github.com/osrg/gobgp/v3@v3.37.0/pkg/server/server.go:317 +0x2a
github.com/vipstack/vipstack/internal/bgp.(*GoBGP).Peers(0xc0001a2000, {0x9a5e10, 0xc00001e0a0})
	/src/internal/bgp/gobgp.go:357 +0x9c
created by github.com/vipstack/vipstack/internal/k8s/agent.(*Agent).run in goroutine 1
	/src/internal/k8s/agent/agent.go:412 +0x1f0

goroutine 9 gp=0xc000103000 m=nil [select]:
net/http.(*persistConn).readLoop(0xc0002b0000)
	/usr/local/go/src/net/http/transport.go:2395 +0x9c5
`
	want := `goroutine 7 gp=0xc000102000 m=nil [chan receive, 2 minutes]:
  github.com/osrg/gobgp/v3/pkg/server.(*BgpServer).mgmtOperation.func1
  github.com/vipstack/vipstack/internal/bgp.(*GoBGP).Peers
  created by github.com/vipstack/vipstack/internal/k8s/agent.(*Agent).run in goroutine 1
`
	if got := Goroutines(log, "vipstack/vipstack/internal"); got != want {
		t.Errorf("Goroutines =\n%s\nwant\n%s", got, want)
	}
	if got := Goroutines("no dump here\n", "x"); got != "" {
		t.Errorf("Goroutines of a log without a dump = %q, want \"\"", got)
	}
}

// goroutinesHelperEnv makes the test binary the process that
// TestGoroutinesLive ends with SIGQUIT.
const goroutinesHelperEnv = "VIPSTACK_TEST_GOROUTINES_HELPER"

// heldInTestutil blocks in a function of this package, where the dump
// must find it. It sleeps: a receive from a channel nothing sends on
// made the runtime end the helper for a deadlock (the helper runs
// without the test timeout's timer), and a SIGQUIT that came during
// that end left the process hung.
func heldInTestutil(ready func()) {
	ready()
	time.Sleep(time.Hour)
}

// TestGoroutinesLive ends a real process held in this package with
// SIGQUIT, as k8slab does an agent that does not stop, and reads its
// standard error with Goroutines: the dump of the Go runtime that built
// the tests (its format is the runtime's to change) yields the held
// goroutine with the function it waits in.
func TestGoroutinesLive(t *testing.T) {
	if os.Getenv(goroutinesHelperEnv) != "" {
		heldInTestutil(func() { fmt.Println("held") })
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGoroutinesLive$")
	cmd.Env = append(os.Environ(), goroutinesHelperEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "held\n" {
		t.Fatalf("the helper said %q (%v), want held", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the helper did not exit within 30 s of SIGQUIT")
	}
	got := Goroutines(stderr.String(), "github.com/vipstack/vipstack/internal/testutil.")
	if !strings.Contains(got, "\n  github.com/vipstack/vipstack/internal/testutil.heldInTestutil\n") || !strings.HasPrefix(got, "goroutine ") {
		t.Errorf("Goroutines of the dump =\n%s\nwant the goroutine held in heldInTestutil; the dump:\n%s", got, Tail(stderr.String(), 40))
	}
}

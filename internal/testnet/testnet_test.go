package testnet

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestTopologyReachabilityAndCleanup(t *testing.T) {
	RequireRoot(t)
	topo, err := Build(Options{Hosts: 2, Client: true, Prefix: "vstt"})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			topo.Close()
		}
	}()
	h1, h2, c := topo.Hosts[0], topo.Hosts[1], topo.Client
	if out, err := h1.Run("ping", "-c1", "-W2", h2.IPv4.Addr().String()); err != nil {
		t.Fatalf("h1 -> h2 IPv4: %v\n%s", err, out)
	}
	if out, err := c.Run("ping", "-6", "-c1", "-W2", h1.IPv6.Addr().String()); err != nil {
		t.Fatalf("client -> h1 IPv6: %v\n%s", err, out)
	}
	if out, err := h2.Run("ping", "-6", "-c1", "-W2", h1.LinkLocal.String()+"%eth0"); err != nil {
		t.Fatalf("h2 -> h1 link-local: %v\n%s", err, out)
	}
	// No route out: the only routes are the connected ones.
	out, _ := h1.Run("ip", "route", "get", "192.0.2.1")
	if !strings.Contains(out, "unreachable") {
		t.Fatalf("expected no route out of the topology, ip route get said: %q", out)
	}
	// A cut link isolates the host.
	if err := h2.Cut(true); err != nil {
		t.Fatal(err)
	}
	if _, err := h1.Run("ping", "-c1", "-W1", h2.IPv4.Addr().String()); err == nil {
		t.Fatal("h2 still reachable after Cut")
	}
	sleeper := h1.Command("sleep", "300")
	if err := h1.Start(sleeper); err != nil {
		t.Fatal(err)
	}
	topo.Close()
	closed = true
	list, _ := exec.Command("ip", "netns", "list").Output()
	if strings.Contains(string(list), topo.Tag) {
		t.Fatalf("namespaces of %s remain after Close:\n%s", topo.Tag, list)
	}
	if err := sleeper.Wait(); err == nil {
		t.Fatal("process started in the topology survived Close")
	}
}

// writeFiles starts, with start, a process in h that creates files in dir
// without pause, waits until it has made 100 and returns a channel closed
// when the process has exited.
func writeFiles(t *testing.T, h *Host, dir string, start func(*exec.Cmd) error) <-chan struct{} {
	t.Helper()
	// true, not the special builtin ":": a failed redirection of ":" would
	// end sh once the directory is gone, and hide a writer that outlived
	// its test.
	c := h.Command("sh", "-c", `i=0; while :; do i=$((i+1)); true > "$1/f$i"; done`, "sh", dir)
	if err := start(c); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	poll := time.Now().Add(10 * time.Second)
	for {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) >= 100 {
			return done
		}
		if time.Now().After(poll) {
			t.Fatalf("the writer made %d files in 10 s, want 100", len(ents))
		}
		time.Sleep(10 * time.Millisecond) // polling another process's output
	}
}

// writerStopped checks that the subtest that ran a writer passed (its temp
// dir was removed without "directory not empty") and that the writer has
// exited, owner naming the test it was tied to.
func writerStopped(t *testing.T, ok bool, done <-chan struct{}, owner string) {
	t.Helper()
	if !ok {
		t.Fatal("the writer subtest failed: its process was not stopped before its temp dir was removed")
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Errorf("the writer still runs 10 s after %s ended", owner)
	}
}

// TestProcessStoppedBeforeTempDir: a process a test starts in a host keeps
// writing into a t.TempDir made after the topology. Its own cleanup kills
// and waits for it before the directory is removed, so the removal does not
// fail with "directory not empty" (the subtest fails if it does).
func TestProcessStoppedBeforeTempDir(t *testing.T) {
	RequireRoot(t)
	var done <-chan struct{}
	ok := t.Run("writer", func(t *testing.T) {
		h := New(t, Options{Hosts: 1, Prefix: "vtW"}).Hosts[0]
		done = writeFiles(t, h, t.TempDir(), h.Start)
	})
	writerStopped(t, ok, done, "its test")
}

// TestSubtestProcessStoppedBeforeItsTempDir: a subtest starts a process in
// its parent's topology that writes into the subtest's own t.TempDir.
// StartFor ties the process to the subtest, so it is killed and waited for
// before that directory is removed at the subtest's end, not at the
// parent's. With Start the subtest fails with "directory not empty", or,
// when the removal wins the race, the writer is still running afterwards.
func TestSubtestProcessStoppedBeforeItsTempDir(t *testing.T) {
	RequireRoot(t)
	h := New(t, Options{Hosts: 1, Prefix: "vtS"}).Hosts[0]
	var done <-chan struct{}
	ok := t.Run("writer", func(t *testing.T) {
		done = writeFiles(t, h, t.TempDir(), func(c *exec.Cmd) error { return h.StartFor(t, c) })
	})
	writerStopped(t, ok, done, "its subtest (the topology lives on)")
}

// TestReservedPortsStayFree: in a host whose ephemeral range is narrowed to
// the 21 ports around 50000, outgoing connections take every port they can
// and never 50000, which a server can then still listen on. Without the
// reservation the connections take 50000 too and the listen fails.
func TestReservedPortsStayFree(t *testing.T) {
	RequireRoot(t)
	h := New(t, Options{Hosts: 1, Prefix: "vtR"}).Hosts[0]
	if out, err := h.Run("sysctl", "-qw", "net.ipv4.ip_local_port_range=49990 50010"); err != nil {
		t.Fatalf("narrowing the ephemeral range: %v: %s", err, out)
	}
	err := h.Do(func() error {
		ln, err := net.Listen("tcp4", "127.0.0.1:40000") // outside the range: port 0 would take one of it
		if err != nil {
			return err
		}
		defer ln.Close()
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		var dialErr error
		for range 32 { // more than the range holds: the last dial fails
			c, err := net.Dial("tcp4", ln.Addr().String())
			if err != nil {
				dialErr = err
				break
			}
			conns = append(conns, c)
			if p := c.LocalAddr().(*net.TCPAddr).Port; p == 50000 {
				return fmt.Errorf("a connection took source port 50000, which is reserved")
			}
		}
		if dialErr == nil || len(conns) < 10 {
			return fmt.Errorf("%d connections got a source port (then: %v), want the range used up", len(conns), dialErr)
		}
		srv, err := net.Listen("tcp4", "127.0.0.1:50000")
		if err != nil {
			return fmt.Errorf("listen on the reserved port with the ephemeral range in use: %w", err)
		}
		return srv.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestGreet: a client in another namespace reaches the greeting server by
// the host's address and reads its payload; the server is gone when its
// test ends.
func TestGreet(t *testing.T) {
	RequireRoot(t)
	topo := New(t, Options{Hosts: 1, Client: true, Prefix: "vtG"})
	h, client := topo.Hosts[0], topo.Client
	addr := net.JoinHostPort(h.IPv4.Addr().String(), "8080")
	read := func() (string, error) {
		var got []byte
		err := client.Do(func() error {
			c, err := net.DialTimeout("tcp", addr, 3*time.Second)
			if err != nil {
				return err
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(3 * time.Second))
			got, err = io.ReadAll(c)
			return err
		})
		return string(got), err
	}
	t.Run("serving", func(t *testing.T) {
		h.Greet(t, ":8080", []byte("h1"))
		if got, err := read(); err != nil || got != "h1" {
			t.Fatalf("read from %s: %q, %v; want \"h1\"", addr, got, err)
		}
	})
	if got, err := read(); err == nil {
		t.Errorf("after the subtest the server still answers %q", got)
	}
}

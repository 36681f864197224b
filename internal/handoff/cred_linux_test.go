package handoff

import (
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRefusesOtherUsers: a process of another user on the node's network
// cannot pose as a successor (it could have the addresses left behind).
// The connection is made from a thread whose effective uid is 65534.
func TestRefusesOtherUsers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to connect as another user")
	}
	n := name(t)
	srv, err := Listen(n, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	done := make(chan error, 1)
	go func() {
		// The thread keeps the changed uid and is retired with this
		// goroutine (never unlocked).
		runtime.LockOSThread()
		if _, _, errno := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), 65534, ^uintptr(0)); errno != 0 {
			done <- errno
			return
		}
		c, err := net.Dial("unix", n)
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		_, _ = c.Write([]byte(`{"type":"hello","pid":1}` + "\n" + `{"type":"ready"}` + "\n"))
		buf := make([]byte, 1)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(buf) // the server closes it
		done <- err
	}()
	if err := <-done; err == nil {
		t.Fatal("the server answered a connection from uid 65534")
	}
	if st := srv.Successor(); st != None {
		t.Fatalf("successor %v after a connection from uid 65534, want none", st)
	}
}

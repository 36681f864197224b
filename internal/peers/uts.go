package peers

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
)

// Proc is a peer process StartUTS started.
type Proc struct {
	PID    int
	Output *syncbuf.Buffer // its standard output and error
	exited chan struct{}
}

// StartUTS runs argv in h, in a UTS namespace of its own whose host name
// is hostname: OpenShift's mdns-publisher names its instances after the
// host name (collision_avoidance = "hostname"), and a test runs several
// such nodes on one machine. sh execs argv, so the process is argv itself
// and a signal sent to PID reaches it (mdns-publisher sends its goodbyes
// on SIGTERM). It is killed, if still running, when t ends (testnet
// tracks it), and what it wrote is logged if t failed.
func StartUTS(t testing.TB, h *testnet.Host, hostname string, argv ...string) *Proc {
	t.Helper()
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	c := h.Command("unshare", "--uts", "sh", "-c", "hostname "+hostname+" && exec "+strings.Join(quoted, " "))
	p := &Proc{Output: &syncbuf.Buffer{}, exited: make(chan struct{})}
	c.Stdout, c.Stderr = p.Output, p.Output
	if err := h.StartFor(t, c); err != nil {
		t.Fatalf("%s in %s: %v", filepath.Base(argv[0]), h.Name, err)
	}
	p.PID = c.Process.Pid
	go func() { _ = c.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s in %s (%s) wrote:\n%s", filepath.Base(argv[0]), h.Name, hostname, p.Output)
		}
	})
	return p
}

// Exited is closed once the process has exited and been reaped.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Term sends SIGTERM and waits for the exit, failing t after 5 s.
func (p *Proc) Term(t testing.TB) {
	t.Helper()
	if err := syscall.Kill(p.PID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		t.Fatalf("pid %d still running 5 s after SIGTERM", p.PID)
	}
}

// Kill ends the process and its children with SIGKILL and waits for it.
func (p *Proc) Kill() {
	_ = syscall.Kill(-p.PID, syscall.SIGKILL)
	<-p.exited
}

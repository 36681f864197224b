package ipfailover_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/ipfailover"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
)

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// vipstackBin builds cmd/vipstack once per test run.
func vipstackBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vsL-bin-")
		if err != nil {
			binErr = err
			return
		}
		binDir = dir
		if binPath, binErr = peers.BuildVipstack(dir); binErr != nil {
			os.RemoveAll(dir)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// node is one `vipstack ipfailover` process on a host.
type node struct {
	h    *testnet.Host
	cmd  *exec.Cmd
	log  *syncbuf.Buffer
	done chan struct{}
}

// startNode runs `vipstack ipfailover` in h with env (KEY=value) and args.
func startNode(t *testing.T, h *testnet.Host, env []string, args ...string) *node {
	t.Helper()
	state := t.TempDir()
	all := append([]string{"ipfailover", "--state-dir", state, "--status-addr", statusAddr}, args...)
	c := h.Command(vipstackBin(t), all...)
	c.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	n := &node{h: h, cmd: c, log: &syncbuf.Buffer{Limit: 8 << 20}, done: make(chan struct{})}
	c.Stdout, c.Stderr = n.log, n.log
	// StartFor, not Start: a subtest's node writes into the subtest's
	// state dir and must stop before that dir is removed, not when the
	// parent that built the topology ends.
	if err := h.StartFor(t, c); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = c.Wait()
		close(n.done)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- %s log (tail):\n%s", h.Name, tail(n.log.String(), 40))
		}
	})
	return n
}

// statusAddr is where every node serves its status, on its own loopback.
const statusAddr = "127.0.0.1:9651"

// kill crashes the node: SIGKILL to its whole process group.
func (n *node) kill() {
	if n.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	n.wait(5 * time.Second)
}

// term stops the node gracefully.
func (n *node) term(t *testing.T) {
	t.Helper()
	if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !n.wait(10 * time.Second) {
		t.Fatalf("%s did not exit within 10s of SIGTERM", n.h.Name)
	}
}

func (n *node) wait(d time.Duration) bool {
	select {
	case <-n.done:
		return true
	case <-time.After(d):
		return false
	}
}

// status fetches the node's JSON status over its loopback: the socket is
// opened on a thread inside the node's namespace.
func (n *node) status() (ipfailover.Status, error) {
	var st ipfailover.Status
	err := n.h.Do(func() error {
		c, err := net.DialTimeout("tcp", statusAddr, time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		if _, err := fmt.Fprintf(c, "GET /status HTTP/1.0\r\nHost: x\r\n\r\n"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&st)
	})
	return st, err
}

// listen opens a TCP listener on port in h (all addresses) that accepts
// and closes connections: the monitored service.
func listen(t *testing.T, h *testnet.Host, port int) net.Listener {
	t.Helper()
	var ln net.Listener
	if err := h.Do(func() error {
		var err error
		ln, err = net.Listen("tcp", fmt.Sprintf(":%d", port))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return ln
}

// holdings returns, for each host, which of vips it holds.
func holdings(hs []*testnet.Host, vips []netip.Addr) ([]map[netip.Addr]bool, error) {
	want := map[netip.Addr]bool{}
	for _, a := range vips {
		want[a] = true
	}
	out := make([]map[netip.Addr]bool, len(hs))
	for i, h := range hs {
		addrs, err := h.Addrs()
		if err != nil {
			return nil, err
		}
		out[i] = map[netip.Addr]bool{}
		for _, s := range addrs {
			if p, err := netip.ParsePrefix(s); err == nil && want[p.Addr()] {
				out[i][p.Addr()] = true
			}
		}
	}
	return out, nil
}

// spread describes who holds what: per-host counts, VIPs held by none and
// VIPs held by more than one host.
type spread struct {
	counts  []int
	missing []netip.Addr
	twice   []netip.Addr
}

func (s spread) String() string {
	return fmt.Sprintf("counts %v, %d held by none %v, %d held twice %v", s.counts, len(s.missing), first(s.missing), len(s.twice), first(s.twice))
}

func first(a []netip.Addr) []netip.Addr { return a[:min(len(a), 3)] }

func spreadOf(hs []*testnet.Host, vips []netip.Addr) (spread, error) {
	hold, err := holdings(hs, vips)
	if err != nil {
		return spread{}, err
	}
	var s spread
	for _, m := range hold {
		s.counts = append(s.counts, len(m))
	}
	for _, a := range vips {
		n := 0
		for _, m := range hold {
			if m[a] {
				n++
			}
		}
		switch {
		case n == 0:
			s.missing = append(s.missing, a)
		case n > 1:
			s.twice = append(s.twice, a)
		}
	}
	return s, nil
}

// waitSpread polls (every 50 ms, at most timeout) until ok holds for the
// spread among hs, stable for `stable`, and returns that spread.
func waitSpread(t *testing.T, why string, hs []*testnet.Host, vips []netip.Addr, stable, timeout time.Duration, ok func(spread) bool) spread {
	t.Helper()
	start := time.Now()
	var since time.Time
	var last spread
	for time.Since(start) < timeout {
		s, err := spreadOf(hs, vips)
		if err != nil {
			t.Fatal(err)
		}
		last = s
		if ok(s) {
			if since.IsZero() {
				since = time.Now()
			}
			if time.Since(since) >= stable {
				t.Logf("%s: %v after %v", why, s, since.Sub(start).Round(time.Millisecond))
				return s
			}
		} else {
			since = time.Time{}
		}
		time.Sleep(50 * time.Millisecond) // polling the kernel's address lists, bounded by timeout
	}
	t.Fatalf("%s: not reached within %v; last: %v", why, timeout, last)
	return last
}

// even: every VIP held exactly once and the counts within one of each other.
func even(s spread) bool {
	if len(s.missing) > 0 || len(s.twice) > 0 {
		return false
	}
	c := append([]int(nil), s.counts...)
	sort.Ints(c)
	return c[len(c)-1]-c[0] <= 1
}

// once: every VIP held exactly once.
func once(s spread) bool { return len(s.missing) == 0 && len(s.twice) == 0 }

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

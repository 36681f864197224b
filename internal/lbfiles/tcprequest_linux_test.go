//go:build linux

package lbfiles

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/lb/logging/logtest"
	"github.com/vipstack/vipstack/internal/testutil"
)

// tcpRequestRules: tcp-request connection rules (set-src by ipmask,
// reject, accept, silent-drop) and a content reject, with http-request
// lines haproxy ignores in mode tcp, under haproxy 2.6 and `vipstack lb`
// side by side. Clients from four addresses of the test network: the
// same outcome (the server's name; a reset for a connection rule's
// reject; an end of file for a content reject; nothing at all for a
// silent-drop), the same log lines (set-src's address in %ci; none for a
// connection rule's reject or drop; PR without a server for a content
// reject) and the same dcon, dreq, conn_tot and stot (of the backend:
// dreq, stot).
func tcpRequestRules(t *testing.T, bin string) {
	l := newLab(t, 1)
	pg1 := newServer("pg1")
	l.serve(l.backs[0], net.JoinHostPort(l.backIP(0), "5432"), pg1, nil)
	// The client's own address (198.18.0.x, below .128) is refused by
	// `write`; these are the others.
	for _, a := range []string{"198.18.0.200", "198.18.0.201", "198.18.0.202"} {
		if _, err := l.client.Run("ip", "addr", "add", a+"/24", "dev", "eth0"); err != nil {
			t.Fatal(err)
		}
	}
	logs := map[string]*net.UnixConn{}
	for _, b := range l.lbs {
		logs[b.Name] = logtest.ListenUnixgram(t, filepath.Join(b.Dir, "log.sock"))
	}
	l.start(bin, "tcp-request.cfg", 5000, func(b *balancer) []string {
		return []string{"LOGSOCK", filepath.Join(b.Dir, "log.sock"), "STATSSOCK", filepath.Join(b.Dir, "stats"), "PG1", l.backIP(0)}
	})
	// l.start's probes came from the client's own address, which
	// `write` refuses, unlogged; nothing else was logged yet.
	own := l.client.IPv4.Addr()
	cases := []struct {
		name, port string
		src        netip.Addr
		want       string // the outcome
		log        bool   // a line is logged
		// quiet: the client sends nothing (a client that sends to a
		// socket dropped silently gets a reset from the kernel).
		quiet bool
	}{
		{"write, an allowed network", "5000", netip.MustParseAddr("198.18.0.200"), "pg1", true, false},
		{"write, the refused network", "5000", own, "reset", false, false},
		{"read, accepted", "5001", netip.MustParseAddr("198.18.0.200"), "pg1", true, false},
		{"read, content reject", "5001", netip.MustParseAddr("198.18.0.201"), "closed", true, false},
		{"read, silent-drop", "5001", netip.MustParseAddr("198.18.0.202"), "nothing", false, true},
		{"write, the refused network, a quiet client", "5000", own, "reset", false, true},
	}
	// The probe was refused once the balancer took it from the accept
	// queue, which may be after the probe's dial returned: wait until it
	// is counted, so that the snapshot holds it.
	var before []map[string]int
	for _, b := range l.lbs {
		var snap map[string]int
		testutil.Eventually(t, 5*time.Second, func() error {
			snap = denied(t, filepath.Join(b.Dir, "stats"))
			if snap["write frontend dcon"] < 1 {
				return fmt.Errorf("%s: the probe is not counted yet: %v", b.Name, snap)
			}
			return nil
		})
		before = append(before, snap)
	}
	for _, c := range cases {
		var lines []string
		for _, b := range l.lbs {
			got := l.outcome(c.src, net.JoinHostPort(b.IP(), c.port), c.quiet)
			if got != c.want {
				t.Errorf("%s: %s: %s, want %s", c.name, b.Name, got, c.want)
			}
			line := ""
			if c.log {
				line = logtest.ReadDatagram(t, logs[b.Name], 5*time.Second)
			}
			lines = append(lines, maskLogLine(line, b.IP()))
		}
		t.Logf("%s: haproxy logged %q", c.name, lines[0])
		if lines[0] != lines[1] {
			t.Errorf("%s: log lines differ:\nhaproxy:  %q\nvipstack: %q", c.name, lines[0], lines[1])
		}
	}
	for _, b := range l.lbs {
		if extra := readDatagramWithin(logs[b.Name], 500*time.Millisecond); extra != "" {
			t.Errorf("%s logged more: %q", b.Name, extra)
		}
	}
	var counts []map[string]int
	for i, b := range l.lbs {
		after := denied(t, filepath.Join(b.Dir, "stats"))
		for k := range after {
			after[k] -= before[i][k]
		}
		counts = append(counts, after)
	}
	t.Logf("counts of the cases, haproxy: %v", counts[0])
	if diff := cmp.Diff(counts[0], counts[1]); diff != "" {
		t.Errorf("frontend counts (-haproxy +vipstack):\n%s", diff)
	}
}

// outcome connects from src to addr, says HELLO unless quiet and
// reports what came back: the server's name, "reset", "closed" (an end
// of file) or "nothing" (silence for a second).
func (l *lab) outcome(src netip.Addr, addr string, quiet bool) string {
	var got string
	err := l.client.Do(func() error {
		d := net.Dialer{Timeout: 3 * time.Second, LocalAddr: &net.TCPAddr{IP: src.AsSlice()}}
		c, err := d.Dial("tcp", addr)
		if errors.Is(err, syscall.ECONNRESET) {
			got = "reset" // before the dial returned
			return nil
		}
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		if !quiet {
			// A reset that arrives before the write is reported by
			// the write alone; the read after it sees an end of file.
			if _, err := io.WriteString(c, "HELLO\n"); errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
				got = "reset"
				return nil
			}
		}
		buf := make([]byte, 64)
		n, err := c.Read(buf)
		var ne net.Error
		switch {
		case n > 0:
			got = strings.TrimSpace(string(buf[:n]))
		case errors.Is(err, syscall.ECONNRESET):
			got = "reset"
		case errors.Is(err, io.EOF):
			got = "closed"
		case errors.As(err, &ne) && ne.Timeout():
			got = "nothing"
		default:
			got = fmt.Sprint(err)
		}
		return nil
	})
	if err != nil {
		return err.Error()
	}
	return got
}

var logPort = regexp.MustCompile(`^(\S+):(\d+) `)

// maskLogLine makes a line of the fixture's log-format comparable: the
// client's port becomes P (0 stays 0) and the balancer's address B.
func maskLogLine(line, ip string) string {
	line = strings.TrimSpace(line)
	if m := logPort.FindStringSubmatch(line); m != nil && m[2] != "0" {
		line = m[1] + ":P " + line[len(m[0]):]
	}
	return strings.ReplaceAll(line, ip+":", "B:")
}

func readDatagramWithin(c *net.UnixConn, d time.Duration) string {
	_ = c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 4096)
	n, _ := c.Read(buf)
	return string(buf[:n])
}

// denied reads the frontends' dcon, dreq, conn_tot and stot and the
// backends' dreq and stot from a stats socket's `show stat`.
func denied(t *testing.T, sock string) map[string]int {
	t.Helper()
	out := map[string]int{}
	err := testutil.Poll(5*time.Second, func() error {
		c, err := net.Dial("unix", sock)
		if err != nil {
			return err
		}
		defer c.Close()
		_, _ = io.WriteString(c, "show stat\n")
		b, err := io.ReadAll(c)
		if err != nil {
			return err
		}
		rows := strings.Split(strings.TrimSpace(string(b)), "\n")
		head := strings.Split(strings.TrimPrefix(rows[0], "# "), ",")
		for _, r := range rows[1:] {
			f := strings.Split(r, ",")
			if len(f) < len(head) || f[1] != "FRONTEND" && f[1] != "BACKEND" {
				continue
			}
			keys := []string{"dcon", "dreq", "conn_tot", "stot"}
			if f[1] == "BACKEND" {
				keys = []string{"dreq", "stot"}
			}
			for _, k := range keys {
				if i := slices.Index(head, k); i >= 0 {
					n, err := strconv.Atoi(f[i])
					if err != nil {
						return fmt.Errorf("%s %s: %q", f[0], k, f[i])
					}
					out[f[0]+" "+strings.ToLower(f[1])+" "+k] = n
				}
			}
		}
		if len(out) == 0 {
			return fmt.Errorf("no frontend in %q", b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

package lbcli

import (
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/lb"
)

// fakeLB is a Balancer with two servers in backend "masters".
type fakeLB struct {
	mu    sync.Mutex
	admin map[string]lb.AdminState
}

func (f *fakeLB) Snapshot() lb.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	srv := func(name, addr string) lb.ServerStats {
		s := lb.ServerStats{Name: name, Addr: addr, Up: true, Weight: 1, Status: "UP", Admin: f.admin[name],
			Check: true, CheckStatus: "L7OK", CheckCode: 200, CheckRise: 3, CheckFall: 2, CheckHealth: 4, LastChangeSeconds: 7}
		switch s.Admin {
		case lb.AdminMaint:
			s.Status, s.CheckStatus, s.Up = "MAINT", "", false
		case lb.AdminDrain:
			s.Status = "DRAIN"
		}
		return s
	}
	return lb.Snapshot{
		Frontends: []lb.FrontendStats{{Name: "main", Sessions: 2, TotalSessions: 40}},
		Backends: []lb.BackendStats{{Name: "masters", Servers: []lb.ServerStats{
			srv("m0", "198.18.0.11:6443"), srv("m1", "[fd00::12]:6443"),
		}}},
	}
}

func (f *fakeLB) SetServerAdmin(backend, server string, st lb.AdminState) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if backend != "masters" {
		return fmt.Errorf("backend %s: %w", backend, lb.ErrNoBackend)
	}
	if server != "m0" && server != "m1" {
		return fmt.Errorf("server %s: %w", server, lb.ErrNoServer)
	}
	f.admin[server] = st
	return nil
}

// serve starts a Server at level on a Unix socket and returns its path.
func serve(t *testing.T, level Level) (string, *fakeLB) {
	t.Helper()
	f := &fakeLB{admin: map[string]lb.AdminState{}}
	path := filepath.Join(t.TempDir(), "lb.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1_700_000_000, 0)
	s := New(Options{Balancer: f, Level: level, Version: "test-1", Started: start,
		Now: func() time.Time { return start.Add(90061 * time.Second) }})
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ln.Close()
		s.CloseConns()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return path, f
}

// ask sends input on a new connection and reads until the server closes.
func ask(t *testing.T, path, input string) string {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, input); err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading the answer to %.80q: %v (got %.200q)", input, err, out)
	}
	return string(out)
}

func TestCommands(t *testing.T) {
	path, f := serve(t, LevelAdmin)
	header := serversStateHeader
	tests := []struct {
		name, in, want string
	}{
		{"version", "show version\n", "test-1\n\n"},
		{"level", "show cli level\n", "admin\n\n"},
		{"lowered", "operator; show cli level; user; show cli level\n", "\noperator\n\n\nuser\n\n"},
		{"backends", "show backend\n", "# name\nmasters\n\n"},
		{"info", "show info\n", ""}, // checked below
		{"weight", "get weight masters/m1\n", "1 (initial 1)\n\n"},
		{"weight, no slash", "get weight masters\n", "Require 'backend/server'.\n\n"},
		{"weight, no backend", "get weight x/m1\n", "No such backend.\n\n"},
		{"weight, no server", "get weight masters/zz\n", "No such server.\n\n"},
		{"servers state", "show servers state\n", header +
			"2 masters 1 m0 198.18.0.11 2 0 1 1 7 15 3 4 6 0 0 0 - 6443 - 0 0 - - 0\n" +
			"2 masters 2 m1 fd00::12 2 0 1 1 7 15 3 4 6 0 0 0 - 6443 - 0 0 - - 0\n\n"},
		{"servers state, no backend", "show servers state nope\n", "Can't find backend.\n\n"},
		{"set state, bad", "set server masters/m0 state off\n", "'set server <srv> state' expects 'ready', 'drain' and 'maint'.\n\n"},
		{"set state, no server", "set server masters/zz state maint\n", "No such server.\n\n"},
		{"set, not state", "set server masters/m0 weight 5\n", "'set server <srv> weight' is not served by vipstack; it serves 'set server <backend>/<server> state ready|drain|maint'.\n\n"},
		{"two lines", "show version\nshow cli level\n", "test-1\n\nadmin\n\n"},
		{"no such proxy", "show stat up no-maint masters\n", "No such proxy.\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ask(t, path, tt.in)
			if tt.name == "info" {
				for _, want := range []string{"Name: vipstack\n", "Version: test-1\n", "Uptime: 1d 1h01m01s\n", "Uptime_sec: 90061\n", "CurrConns: 2\n", "CumConns: 40\n"} {
					if !strings.Contains(got, want) {
						t.Errorf("show info lacks %q:\n%s", want, got)
					}
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%q (-want +got):\n%s", tt.in, diff)
			}
		})
	}
	if len(f.admin) != 0 {
		t.Errorf("failed commands changed state: %v", f.admin)
	}
}

func TestServerStateCommands(t *testing.T) {
	path, f := serve(t, LevelAdmin)
	steps := []struct {
		in     string
		server string
		want   lb.AdminState
		line   string // m0's `show servers state` fields 6-7 and 14 afterwards
	}{
		{"set server masters/m0 state maint\n", "m0", lb.AdminMaint, "0 1 14"},
		{"set server masters/m0 state ready\n", "m0", lb.AdminReady, "2 0 6"},
		{"set server masters/m0 state drain\n", "m0", lb.AdminDrain, "2 8 6"},
		{"disable server masters/m0\n", "m0", lb.AdminMaint, "0 1 14"},
		{"enable server masters/m0\n", "m0", lb.AdminReady, "2 0 6"},
	}
	for _, s := range steps {
		if got := ask(t, path, s.in); got != "\n" {
			t.Errorf("%q answered %q, want an empty line", s.in, got)
		}
		if got := f.admin[s.server]; got != s.want {
			t.Errorf("after %q: %s is %v, want %v", s.in, s.server, got, s.want)
		}
		lines := strings.Split(ask(t, path, "show servers state masters\n"), "\n")
		fields := strings.Fields(lines[2])
		if got := fields[5] + " " + fields[6] + " " + fields[13]; got != s.line {
			t.Errorf("after %q: op state, admin state, check state %q, want %q (%s)", s.in, got, s.line, lines[2])
		}
	}
	// The stats CSV says MAINT for a maintained server.
	ask(t, path, "disable server masters/m1\n")
	csv := ask(t, path, "show stat\n")
	if !strings.Contains(csv, "masters,m1,") || !strings.Contains(csv, ",MAINT,") {
		t.Errorf("show stat after disable:\n%s", csv)
	}
	if got := ask(t, path, "show stat no-maint\n"); strings.Contains(got, "masters,m1,") {
		t.Errorf("show stat no-maint shows m1:\n%s", got)
	}
	if got := ask(t, path, "show stat -1 4 1\n"); strings.Count(got, "\n") != 3 || !strings.Contains(got, "masters,m0,") {
		t.Errorf("show stat -1 4 1 (servers, sid 1):\n%s", got)
	}
	if got := ask(t, path, "show stat json\n"); !strings.HasPrefix(got, `[[{"objType":"Frontend"`) {
		t.Errorf("show stat json:\n%.200s", got)
	}
}

func TestLevels(t *testing.T) {
	path, f := serve(t, LevelUser)
	for _, in := range []string{"set server masters/m0 state maint\n", "disable server masters/m0\n", "enable server masters/m0\n"} {
		if got := ask(t, path, in); got != "Permission denied\n\n" {
			t.Errorf("%q at level user: %q, want Permission denied", in, got)
		}
	}
	if len(f.admin) != 0 {
		t.Errorf("a user-level connection changed state: %v", f.admin)
	}
	// Operator cannot either; and a session cannot raise its level.
	path2, f2 := serve(t, LevelOperator)
	if got := ask(t, path2, "disable server masters/m0\n"); got != "Permission denied\n\n" {
		t.Errorf("disable at level operator: %q", got)
	}
	if got := ask(t, path2, "user; operator; show cli level\n"); got != "\nPermission denied\n\nuser\n\n" { // haproxy 2.6's answer
		t.Errorf("user then operator: %q, want the level to stay user", got)
	}
	if len(f2.admin) != 0 {
		t.Errorf("an operator-level connection changed state: %v", f2.admin)
	}
	// help lists only what the level allows.
	help := ask(t, path, "help\n")
	if strings.Contains(help, "set server") || !strings.Contains(help, "show stat") {
		t.Errorf("help at level user:\n%s", help)
	}
	if got := ask(t, path, "frobnicate\n"); !strings.HasPrefix(got, "Unknown command: 'frobnicate'. vipstack serves:\n") {
		t.Errorf("unknown command: %q", got)
	}
}

func TestPrompt(t *testing.T) {
	path, _ := serve(t, LevelAdmin)
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	read := func(want string) {
		t.Helper()
		buf := make([]byte, len(want))
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != want {
			t.Fatalf("read %q, %v; want %q", buf, err, want)
		}
	}
	io.WriteString(c, "prompt\n")
	read("\n> ")
	// The connection stays open between lines in interactive mode.
	io.WriteString(c, "show version\n")
	read("test-1\n\n> ")
	io.WriteString(c, "\n")
	read("> ")
	io.WriteString(c, "quit\n")
	if rest, err := io.ReadAll(c); err != nil || len(rest) != 0 {
		t.Fatalf("after quit: %q, %v; want the connection closed", rest, err)
	}
}

func TestIdleTimeout(t *testing.T) {
	f := &fakeLB{admin: map[string]lb.AdminState{}}
	path := filepath.Join(t.TempDir(), "lb.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{Balancer: f, IdleTimeout: 50 * time.Millisecond})
	go s.Serve(ln)
	defer ln.Close()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	// A client that sends nothing is closed by the idle timeout, not
	// served forever.
	if _, err := io.ReadAll(c); err != nil {
		t.Fatalf("idle connection: %v, want it closed", err)
	}
}

func TestSplitCommands(t *testing.T) {
	got := splitCommands(`show stat; set server a/b state maint;;show x\;y`)
	want := []string{"show stat", " set server a/b state maint", "", "show x;y"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestLongLine(t *testing.T) {
	path, _ := serve(t, LevelAdmin)
	if got := ask(t, path, strings.Repeat("x", maxLine+10)+"\n"); got != "Line too long.\n\n" {
		t.Errorf("a %d-byte line: %q", maxLine+10, got)
	}
}

package lbcli

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/lb"
	lbstats "github.com/vipstack/vipstack/internal/lb/stats"
)

// fakeLB is a Balancer with two servers in backend "masters", m0 of
// weight 1 and m1 of weight 3.
type fakeLB struct {
	mu     sync.Mutex
	admin  map[string]lbstats.AdminState
	weight map[string]int // set at runtime
	shut   map[string]int // shutdown sessions calls
	killed []uintptr      // shutdown session calls that closed one
}

var fakeInitial = map[string]int{"m0": 1, "m1": 3}

func (f *fakeLB) Snapshot() lbstats.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	srv := func(name, addr string) lbstats.ServerStats {
		w, ok := f.weight[name]
		if !ok {
			w = fakeInitial[name]
		}
		s := lbstats.ServerStats{Name: name, Addr: addr, Up: true, Weight: w, InitialWeight: fakeInitial[name], Status: "UP", Admin: f.admin[name],
			Check: true, CheckStatus: "L7OK", CheckCode: 200, CheckRise: 3, CheckFall: 2, CheckHealth: 4, LastChangeSeconds: 7}
		switch s.Admin {
		case lbstats.AdminMaint:
			s.Status, s.CheckStatus, s.Up = "MAINT", "", false
		case lbstats.AdminDrain:
			s.Status = "DRAIN"
		}
		return s
	}
	return lbstats.Snapshot{
		Frontends: []lbstats.FrontendStats{{Name: "main", Sessions: 2, TotalSessions: 40}},
		Backends: []lbstats.BackendStats{{Name: "masters", Servers: []lbstats.ServerStats{
			srv("m0", "198.18.0.11:6443"), srv("m1", "[fd00::12]:6443"),
		}}},
	}
}

// fakeSessions are the fake's connections: one relayed to m1 with its
// accept time known, one connecting to m0 over IPv6 without it.
var fakeSessions = []lb.Session{
	{ID: 0xc000123400, Frontend: "main", Backend: "masters", Server: "m1", Connected: true,
		Client: netip.MustParseAddrPort("198.18.0.50:40000"), Listener: netip.MustParseAddrPort("198.18.0.5:6443"),
		ServerAddr: netip.MustParseAddrPort("[fd00::12]:6443"), Local: netip.MustParseAddrPort("[fd00::1]:50000"),
		Accepted: time.Date(2026, 11, 23, 19, 38, 23, 927691000, time.Local), Age: 3725 * time.Second},
	{ID: 0xc000123500, Frontend: "main", Backend: "masters", Server: "m0",
		Client: netip.MustParseAddrPort("[fd00::50]:40001"), Listener: netip.MustParseAddrPort("[fd00::5]:6443"),
		ServerAddr: netip.MustParseAddrPort("198.18.0.11:6443")},
}

func (f *fakeLB) Sessions() []lb.Session { return fakeSessions }

func (f *fakeLB) find(backend, server string) error {
	if backend != "masters" {
		return fmt.Errorf("backend %s: %w", backend, lb.ErrNoBackend)
	}
	if server != "m0" && server != "m1" {
		return fmt.Errorf("server %s: %w", server, lb.ErrNoServer)
	}
	return nil
}

func (f *fakeLB) SetServerAdmin(backend, server string, st lbstats.AdminState) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.find(backend, server); err != nil {
		return err
	}
	f.admin[server] = st
	return nil
}

func (f *fakeLB) SetServerWeight(backend, server string, w int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.find(backend, server); err != nil {
		return err
	}
	f.weight[server] = w
	return nil
}

func (f *fakeLB) ShutdownServerSessions(backend, server string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.find(backend, server); err != nil {
		return 0, err
	}
	f.shut[server]++
	return 2, nil
}

// ShutdownSession closes one of fakeSessions (noted in killed).
func (f *fakeLB) ShutdownSession(id uintptr) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ss := range fakeSessions {
		if ss.ID == id {
			f.killed = append(f.killed, id)
			return true
		}
	}
	return false
}

// serve starts a Server at level on a Unix socket and returns its path.
func serve(t *testing.T, level Level) (string, *fakeLB) {
	t.Helper()
	f := &fakeLB{admin: map[string]lbstats.AdminState{}, weight: map[string]int{}, shut: map[string]int{}}
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
		{"weight", "get weight masters/m1\n", "3 (initial 3)\n\n"},
		{"weight, no slash", "get weight masters\n", "Require 'backend/server'.\n\n"},
		{"weight, no backend", "get weight x/m1\n", "No such backend.\n\n"},
		{"weight, no server", "get weight masters/zz\n", "No such server.\n\n"},
		{"servers state", "show servers state\n", header +
			"2 masters 1 m0 198.18.0.11 2 0 1 1 7 15 3 4 6 0 0 0 - 6443 - 0 0 - - 0\n" +
			"2 masters 2 m1 fd00::12 2 0 3 3 7 15 3 4 6 0 0 0 - 6443 - 0 0 - - 0\n\n"},
		{"servers state, no backend", "show servers state nope\n", "Can't find backend.\n\n"},
		{"set state, bad", "set server masters/m0 state off\n", "'set server <srv> state' expects 'ready', 'drain' and 'maint'.\n\n"},
		{"set state, no server", "set server masters/zz state maint\n", "No such server.\n\n"},
		{"set, not state or weight", "set server masters/m0 addr 198.18.0.9\n", "'set server <srv> addr' is not served by vipstack; it serves 'set server <backend>/<server> state ready|drain|maint' and 'weight <w>[%]'.\n\n"},
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
	if len(f.admin) != 0 || len(f.weight) != 0 || len(f.shut) != 0 {
		t.Errorf("failed commands changed state: %v %v %v", f.admin, f.weight, f.shut)
	}
}

// TestWeightCommands runs set weight and set server ... weight in
// sequence against haproxy 2.6.12's answers (measured on a server of
// weight 3: 50% gives 1, 101% 3, 1000% 30, 10000% 256; error texts as
// haproxy writes them, the two about garbage without a newline), each
// followed by get weight and the weights of show servers state.
func TestWeightCommands(t *testing.T) {
	path, f := serve(t, LevelAdmin)
	steps := []struct {
		in, want string
		get      string // get weight masters/m1 afterwards
	}{
		{"set weight masters/m1 2\n", "\n", "2 (initial 3)"},
		{"set weight masters/m1 50%\n", "\n", "1 (initial 3)"},
		{"set weight masters/m1 256\n", "\n", "256 (initial 3)"},
		{"set weight masters/m1 257\n", "Absolute weight can only be between 0 and 256 inclusive.\n\n", "256 (initial 3)"},
		{"set weight masters/m1 -1\n", "Absolute weight can only be between 0 and 256 inclusive.\n\n", "256 (initial 3)"},
		{"set weight masters/m1 99999999999\n", "Absolute weight can only be between 0 and 256 inclusive.\n\n", "256 (initial 3)"},
		{"set weight masters/m1 101%\n", "\n", "3 (initial 3)"},
		{"set weight masters/m1 1000%\n", "\n", "30 (initial 3)"},
		{"set weight masters/m1 10000%\n", "\n", "256 (initial 3)"},
		{"set weight masters/m1 99999999999%\n", "\n", "256 (initial 3)"},
		{"set weight masters/m1 -5%\n", "Relative weight must be positive.\n\n", "256 (initial 3)"},
		{"set weight masters/m1 0%\n", "\n", "0 (initial 3)"},
		{"set weight masters/m1 abc\n", "Empty weight string empty or preceded by garbage\n", "0 (initial 3)"},
		{"set weight masters/m1 %\n", "Empty weight string empty or preceded by garbage\n", "0 (initial 3)"},
		{"set weight masters/m1 50%x\n", "Trailing garbage in weight string\n", "0 (initial 3)"},
		{"set weight masters/m1 0x10\n", "Trailing garbage in weight string\n", "0 (initial 3)"},
		{"set weight masters/m1 2.5\n", "Trailing garbage in weight string\n", "0 (initial 3)"},
		{"set weight masters/m1 +2\n", "\n", "2 (initial 3)"},
		{"set weight masters/m1 07 extra\n", "\n", "7 (initial 3)"},
		{"set weight masters/m1\n", "Require <weight> or <weight%>.\n\n", "7 (initial 3)"},
		{"set weight masters\n", "Require 'backend/server'.\n\n", "7 (initial 3)"},
		{"set weight masters/zz 300\n", "No such server.\n\n", "7 (initial 3)"},
		{"set weight nope/m1 abc\n", "No such backend.\n\n", "7 (initial 3)"},
		{"set server masters/m1 weight 100%\n", "\n", "3 (initial 3)"},
		{"set server masters/m1 weight 0\n", "\n", "0 (initial 3)"},
		{"set server masters/m1 weight\n", "Require <weight> or <weight%>.\n\n", "0 (initial 3)"},
		{"set server masters/m1 weight 300\n", "Absolute weight can only be between 0 and 256 inclusive.\n\n", "0 (initial 3)"},
		{"set server masters/m1 weight 2x\n", "Trailing garbage in weight string\n", "0 (initial 3)"},
		{"set server masters/zz weight\n", "No such server.\n\n", "0 (initial 3)"},
		{"set server masters/m1 weight 5\n", "\n", "5 (initial 3)"},
	}
	for _, s := range steps {
		if got := ask(t, path, s.in); got != s.want {
			t.Errorf("%q answered %q, want %q", s.in, got, s.want)
		}
		if got := ask(t, path, "get weight masters/m1\n"); got != s.get+"\n\n" {
			t.Errorf("after %q: get weight %q, want %q", s.in, got, s.get)
		}
		cur, initial, _ := strings.Cut(s.get, " (initial ")
		lines := strings.Split(ask(t, path, "show servers state masters\n"), "\n")
		if fields := strings.Fields(lines[3]); fields[7] != cur || fields[8]+")" != initial {
			t.Errorf("after %q: show servers state's srv_uweight srv_iweight %s %s, want %s %s", s.in, fields[7], fields[8], cur, strings.TrimSuffix(initial, ")"))
		}
	}
	if f.weight["m0"] != 0 || len(f.weight) != 1 {
		t.Errorf("weights set: %v, want m1's only", f.weight)
	}
}

// TestShutdownSessions: shutdown sessions server closes a server's
// connections at level admin only, with haproxy 2.6.12's answers
// (measured; words after the server are ignored).
func TestShutdownSessions(t *testing.T) {
	path, f := serve(t, LevelAdmin)
	for _, tt := range []struct{ in, want string }{
		{"shutdown sessions server masters/m0\n", "\n"},
		{"shutdown sessions server masters/m0 extra\n", "\n"},
		{"shutdown sessions server masters\n", "Require 'backend/server'.\n\n"},
		{"shutdown sessions server\n", "Require 'backend/server'.\n\n"},
		{"shutdown sessions server nope/m0\n", "No such backend.\n\n"},
		{"shutdown sessions server masters/zz\n", "No such server.\n\n"},
		{"user; shutdown sessions server masters/m1\n", "\nPermission denied\n\n"},
		{"operator; shutdown sessions server masters/m1\n", "\nPermission denied\n\n"},
		{"operator; set weight masters/m1 1\n", "\nPermission denied\n\n"},
		{"operator; set server masters/m1 weight 1\n", "\nPermission denied\n\n"},
	} {
		if got := ask(t, path, tt.in); got != tt.want {
			t.Errorf("%q answered %q, want %q", tt.in, got, tt.want)
		}
	}
	if diff := cmp.Diff(map[string]int{"m0": 2}, f.shut); diff != "" {
		t.Errorf("shutdown calls (-want +got):\n%s", diff)
	}
	if len(f.weight) != 0 {
		t.Errorf("weights changed: %v", f.weight)
	}
}

// TestShowInfo reads show info in its three forms: "Name: value" lines
// as haproxy_exporter parses them (split at the first ": "), typed lines
// and JSON, with the same fields in the same order of haproxy positions.
func TestShowInfo(t *testing.T) {
	path, _ := serve(t, LevelUser)
	plain := strings.TrimSuffix(ask(t, path, "show info\n"), "\n\n")
	var names []string
	vals := map[string]string{}
	for _, line := range strings.Split(plain, "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			t.Fatalf("show info line %q is not key: value", line)
		}
		names = append(names, k)
		vals[k] = v
	}
	for k, want := range map[string]string{"Name": "vipstack", "Version": "test-1", "Nbproc": "1", "Process_num": "1",
		"Uptime": "1d 1h01m01s", "Uptime_sec": "90061", "CurrConns": "2", "CumConns": "40", "Start_time_sec": "1700000000",
		"Memmax_MB": "0", "CurrSslConns": "0", "ActivePeers": "0"} {
		if vals[k] != want {
			t.Errorf("show info %s: %q, want %q", k, vals[k], want)
		}
	}

	typed := strings.Split(strings.TrimSuffix(ask(t, path, "show info typed\n"), "\n\n"), "\n")
	var typedNames []string
	last := -1
	for _, line := range typed {
		f := strings.SplitN(line, ":", 4)
		key := strings.Split(f[0], ".")
		if len(f) != 4 || len(key) != 3 || key[2] != "1" || len(f[1]) != 3 {
			t.Fatalf("typed line %q: want <pos>.<name>.1:<tags>:<type>:<value>", line)
		}
		pos := atoi(key[0])
		if pos <= last {
			t.Errorf("typed line %q: position not after %d", line, last)
		}
		last = pos
		typedNames = append(typedNames, key[1])
		if f[3] != vals[key[1]] {
			t.Errorf("typed %s = %q, plain %q", key[1], f[3], vals[key[1]])
		}
	}
	if diff := cmp.Diff(names, typedNames); diff != "" {
		t.Errorf("typed names (-plain +typed):\n%s", diff)
	}

	var js []struct {
		Field struct {
			Pos  int
			Name string
		}
		ProcessNum int
		Tags       struct{ Origin, Nature, Scope string }
		Value      struct {
			Type  string
			Value any
		}
	}
	dec := json.NewDecoder(strings.NewReader(ask(t, path, "show info typed json\n")))
	dec.UseNumber()
	if err := dec.Decode(&js); err != nil {
		t.Fatalf("show info typed json: %v", err)
	}
	var jsonNames []string
	for _, f := range js {
		jsonNames = append(jsonNames, f.Field.Name)
		if f.ProcessNum != 1 || f.Tags.Origin == "" || f.Tags.Nature == "" || f.Tags.Scope == "" {
			t.Errorf("json field %+v: want processNum 1 and every tag named", f)
		}
		if got := fmt.Sprint(f.Value.Value); got != vals[f.Field.Name] {
			t.Errorf("json %s = %s, plain %q", f.Field.Name, got, vals[f.Field.Name])
		}
	}
	if diff := cmp.Diff(names, jsonNames); diff != "" {
		t.Errorf("json names (-plain +json):\n%s", diff)
	}
}

func TestServerStateCommands(t *testing.T) {
	path, f := serve(t, LevelAdmin)
	steps := []struct {
		in     string
		server string
		want   lbstats.AdminState
		line   string // m0's `show servers state` fields 6-7 and 14 afterwards
	}{
		{"set server masters/m0 state maint\n", "m0", lbstats.AdminMaint, "0 1 14"},
		{"set server masters/m0 state ready\n", "m0", lbstats.AdminReady, "2 0 6"},
		{"set server masters/m0 state drain\n", "m0", lbstats.AdminDrain, "2 8 6"},
		{"disable server masters/m0\n", "m0", lbstats.AdminMaint, "0 1 14"},
		{"enable server masters/m0\n", "m0", lbstats.AdminReady, "2 0 6"},
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
	f := &fakeLB{admin: map[string]lbstats.AdminState{}, weight: map[string]int{}, shut: map[string]int{}}
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

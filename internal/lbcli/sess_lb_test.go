package lbcli

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/lb"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestShowSessRealLB: show sess on a real balancer with real connections
// through it, on a fake clock. Frontend "main" keeps a connection log and
// "plain" none; the sessions of both have an accept time and an age. Every address is checked against what the client
// and the server saw: the client's own address (src), the address it
// dialled (the frontend's addr), the balancer's address toward the server
// (the server's view of its client, the backend's addr). A closed
// connection leaves the list, and its ID is then not found. The section
// ids are show stat's iid (main 1, plain 2, masters 3).
func TestShowSessRealLB(t *testing.T) {
	var mu sync.Mutex
	peers := map[string]bool{} // the server's clients: the balancer's sockets
	m1 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		peers[r.RemoteAddr] = true
		mu.Unlock()
		io.WriteString(w, "m1")
	}))
	t.Cleanup(m1.Close)
	loopback := []lbconfig.Bind{{Addr: mustAddrPort("127.0.0.1:0")}}
	// main's log goes to a UDP socket of the test's that nobody reads.
	sink, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	logTo := []lbconfig.LogTarget{{Network: "udp", Address: sink.LocalAddr().String(), Facility: 16, Level: 7}}
	cfg := &lbconfig.Config{
		Timeouts: lbconfig.Timeouts{Connect: 5 * time.Second},
		Frontends: []lbconfig.Frontend{
			{Name: "main", Binds: loopback, Backend: "masters", Log: &lbconfig.ConnLog{Format: lbconfig.TCPLogFormat}, LogTargets: logTo},
			{Name: "plain", Binds: loopback, Backend: "masters"},
		},
		Backends: []lbconfig.Backend{{Name: "masters", Balance: lbconfig.RoundRobin,
			Servers: []lbconfig.Server{{Name: "m1", Addr: mustAddrPort(m1.Listener.Addr().String()), Weight: 1}}}},
	}
	clk := clock.NewFake(time.Unix(1_700_000_000, 123456000))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := lb.New(lb.Options{Clock: clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Shutdown(canceledCtx()) })
	if err := l.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "lb.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{Balancer: l, Level: LevelOperator, Logger: quiet})
	go s.Serve(ln)
	t.Cleanup(func() { ln.Close(); s.CloseConns() })

	// open opens a connection through a frontend and has one request
	// answered on it, so that it is relayed; the server sees one new
	// client, the balancer's socket toward it.
	type through struct {
		c  net.Conn
		fe string // the frontend's address
	}
	open := func(frontend string) through {
		t.Helper()
		mu.Lock()
		before := len(peers)
		mu.Unlock()
		fe := l.Addrs(frontend)[0].String()
		c, err := requestThrough(t, fe)
		if err != nil || !strings.HasPrefix(c.answer, "HTTP/1.1 200 ") {
			t.Fatalf("a request through %s: %q, %v; want a 200 answer", frontend, c.answer, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(peers) != before+1 {
			t.Fatalf("the server saw %d new clients, want 1", len(peers)-before)
		}
		return through{c: c, fe: fe}
	}
	a := open("main")
	mu.Lock()
	aToward := onlyKey(peers)
	mu.Unlock()
	b := open("main")
	plain := open("plain")
	clk.Advance(65 * time.Second)

	list := ask(t, path, "show sess\n")
	var lines []string
	ids := map[string]string{} // client address: ID
	for _, line := range strings.Split(strings.TrimSuffix(list, "\n\n"), "\n") {
		id, rest, ok := strings.Cut(line, ": ")
		if !ok || !strings.HasPrefix(id, "0x") {
			t.Fatalf("show sess line %q: want <id>: ...", line)
		}
		src := strings.TrimPrefix(strings.Fields(rest)[1], "src=")
		ids[src] = id
		lines = append(lines, rest)
	}
	want := []string{
		"proto=tcpv4 src=" + a.c.LocalAddr().String() + " fe=main be=masters srv=m1 age=1m5s",
		"proto=tcpv4 src=" + b.c.LocalAddr().String() + " fe=main be=masters srv=m1 age=1m5s",
		"proto=tcpv4 src=" + plain.c.LocalAddr().String() + " fe=plain be=masters srv=m1 age=1m5s",
	}
	slices.Sort(want)
	slices.Sort(lines)
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("show sess (-want +got, IDs cut):\n%s", diff)
	}

	stamp := time.Unix(1_700_000_000, 123456000).Local().Format("02/Jan/2006:15:04:05.000000")
	aID := ids[a.c.LocalAddr().String()]
	wantA := fmt.Sprintf("%s: [%s] proto=tcpv4 source=%s\n"+
		"  frontend=main (id=1 mode=tcp) addr=%s\n"+
		"  backend=masters (id=3 mode=tcp) addr=%s\n"+
		"  server=m1 (id=1) addr=%s\n"+
		"  state=EST age=1m5s\n\n", aID, stamp, a.c.LocalAddr(), a.fe, aToward, m1.Listener.Addr())
	if diff := cmp.Diff(wantA, ask(t, path, "show sess "+aID+"\n")); diff != "" {
		t.Errorf("show sess %s (-want +got):\n%s", aID, diff)
	}
	if all := ask(t, path, "show sess all\n"); strings.Count(all, "  state=EST") != 3 || !strings.Contains(all, strings.TrimSuffix(wantA, "\n")) {
		t.Errorf("show sess all: want three blocks, one of them:\n%s\ngot:\n%s", wantA, all)
	}

	a.c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Contains(ask(t, path, "show sess\n"), a.c.LocalAddr().String()) {
		if time.Now().After(deadline) {
			t.Fatal("the closed connection is still listed after 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := ask(t, path, "show sess "+aID+"\n"); got != "Session not found.\n\n" {
		t.Errorf("show sess of the closed connection: %q, want Session not found.", got)
	}
	if got := ask(t, path, "user; show sess\n"); got != "\nPermission denied\n\n" {
		t.Errorf("show sess at level user: %q, want Permission denied (haproxy's, measured)", got)
	}
}

// onlyKey is m's one key.
func onlyKey(m map[string]bool) string {
	for k := range m {
		return k
	}
	return ""
}

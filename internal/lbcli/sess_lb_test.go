package lbcli

import (
	"bufio"
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
		// The connection asking, on the real clock (the Server's Now).
		"proto=unix_stream src=unix:1 fe=GLOBAL be=<NONE> srv=<none> age=0s",
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
	if all := ask(t, path, "show sess all\n"); strings.Count(all, "  state=EST") != 4 || !strings.Contains(all, strings.TrimSuffix(wantA, "\n")) {
		t.Errorf("show sess all: want four blocks (three relayed, the CLI's), one of them:\n%s\ngot:\n%s", wantA, all)
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

// TestShutdownSessionRealLB: shutdown session on a real balancer, with a
// real client and server, and on the runtime API's own connections, on
// three stats sockets (admin and operator Unix sockets, an admin TCP
// one). show sess asked on one socket lists the CLI connections of all
// three, as haproxy does (measured): src=unix:<the socket's place among
// the stats sockets> for a Unix socket, the client's address for TCP.
// Closing a relayed connection: the client and the server both read the
// end of the connection (a FIN, not a reset), its log line's
// termination state is haproxy's "K-" (measured), it leaves show sess
// and m1's scur, and its ID is then not found. Closing a CLI connection
// ends it; a connection that closes itself reads its empty answer and
// prompt, then the end (haproxy's, measured). An operator may not.
func TestShutdownSessionRealLB(t *testing.T) {
	backend, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Close() })
	serverEnd := make(chan error, 4) // how each server-side connection ended (the first's is read)
	go func() {
		for {
			c, err := backend.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(20 * time.Second))
				b := make([]byte, 64)
				for {
					n, err := c.Read(b)
					if err != nil {
						serverEnd <- err
						return
					}
					c.Write(b[:n])
				}
			}()
		}
	}()
	sink, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	dir := t.TempDir()
	admin, oper, tcpSock := filepath.Join(dir, "admin.sock"), filepath.Join(dir, "oper.sock"), "127.0.0.1:"+freePort(t)
	cfg := &lbconfig.Config{
		Timeouts: lbconfig.Timeouts{Connect: 5 * time.Second},
		Frontends: []lbconfig.Frontend{{Name: "main", Binds: []lbconfig.Bind{{Addr: mustAddrPort("127.0.0.1:0")}}, Backend: "masters",
			Log:        &lbconfig.ConnLog{Format: lbconfig.TCPLogFormat},
			LogTargets: []lbconfig.LogTarget{{Network: "udp", Address: sink.LocalAddr().String(), Facility: 16, Level: 7}}}},
		Backends: []lbconfig.Backend{{Name: "masters", Balance: lbconfig.RoundRobin,
			Servers: []lbconfig.Server{{Name: "m1", Addr: mustAddrPort(backend.Addr().String()), Weight: 1}}}},
		StatsSockets: []lbconfig.StatsSocket{{Network: "unix", Address: admin, Level: "admin"},
			{Network: "unix", Address: oper, Level: "operator"}, {Network: "tcp", Address: tcpSock, Level: "admin"}},
	}
	l := startLB(t, lb.Options{Clock: clock.NewFake(time.Unix(1_700_000_000, 0))}, cfg)

	client, err := net.Dial("tcp", l.Addrs("main")[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	client.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(client, "ping")
	if b := make([]byte, 4); func() error { _, err := io.ReadFull(client, b); return err }() != nil || string(b) != "ping" {
		t.Fatalf("the echo through the balancer: %q", b)
	}
	// Two CLI connections held open, interactive: on the operator socket
	// and on the TCP one.
	held := func(network, addr string) *cliConn {
		c, err := net.Dial(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "prompt\n")
		cc := &cliConn{Conn: c, r: bufio.NewReader(c)}
		if got := readUntil(t, cc, "> "); got != "\n> " {
			t.Fatalf("prompt on %s: %q", addr, got)
		}
		return cc
	}
	operHeld := held("unix", oper)
	tcpHeld := held("tcp", tcpSock)
	tcpLocal := tcpHeld.LocalAddr().String()

	// The list, asked on the admin socket, ages of the CLI connections
	// (on the real clock) cut, and each line's ID by its source.
	ids := map[string]string{}
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(ask(t, admin, "show sess\n")), "\n") {
		id, rest, _ := strings.Cut(line, ": ")
		src := strings.TrimPrefix(strings.Fields(rest)[1], "src=")
		ids[src] = id
		if strings.Contains(rest, "fe=GLOBAL") {
			rest = rest[:strings.Index(rest, " age=")]
		}
		lines = append(lines, rest)
	}
	want := []string{
		"proto=tcpv4 src=" + client.LocalAddr().String() + " fe=main be=masters srv=m1 age=0s",
		"proto=unix_stream src=unix:2 fe=GLOBAL be=<NONE> srv=<none>",
		"proto=tcpv4 src=" + tcpLocal + " fe=GLOBAL be=<NONE> srv=<none>",
		"proto=unix_stream src=unix:1 fe=GLOBAL be=<NONE> srv=<none>",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Fatalf("show sess on the admin socket (-want +got, IDs cut):\n%s", diff)
	}
	if got := ask(t, admin, "show sess "+ids[tcpLocal]+"\n"); !strings.Contains(got, "proto=tcpv4 source="+tcpLocal+"\n  frontend=GLOBAL (id=0 mode=tcp) addr="+tcpSock+"\n") {
		t.Errorf("show sess of the TCP CLI connection: %q, want its block with the socket's address", got)
	}
	relayed := ids[client.LocalAddr().String()]

	if got := ask(t, oper, "shutdown session "+relayed+"\n"); got != "Permission denied\n\n" {
		t.Errorf("shutdown session on the operator socket: %q, want Permission denied", got)
	}
	if got := ask(t, admin, "shutdown session "+relayed+"\n"); got != "\n" {
		t.Errorf("shutdown session %s: %q, want the empty answer", relayed, got)
	}
	if _, err := client.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the client after shutdown session read %v, want the end of the connection (io.EOF)", err)
	}
	select {
	case err := <-serverEnd:
		if err != io.EOF {
			t.Errorf("the server after shutdown session read %v, want the end of the connection (io.EOF)", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the server's connection was not closed 10 s after shutdown session")
	}
	sink.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 2048)
	n, _, err := sink.ReadFrom(buf)
	if err != nil {
		t.Fatalf("no log line for the connection: %v", err)
	}
	if f := strings.Fields(string(buf[:n])); len(f) < 5 || f[len(f)-3] != "K-" {
		t.Errorf("log line %q: want the termination state K- (haproxy's, measured)", buf[:n])
	}
	if got := ask(t, admin, "show sess\n"); strings.Contains(got, relayed+":") {
		t.Errorf("show sess after shutdown session still lists %s:\n%s", relayed, got)
	}
	if got := ask(t, admin, "shutdown session "+relayed+"\n"); got != "No such session (use 'show sess').\n\n" {
		t.Errorf("shutdown session %s again: %q, want No such session", relayed, got)
	}
	if sv := l.Snapshot().Backends[0].Servers[0]; sv.Sessions != 0 || sv.TotalSessions != 1 {
		t.Errorf("m1 after shutdown session: scur %d stot %d, want 0 and 1", sv.Sessions, sv.TotalSessions)
	}

	// shutdown sessions server logs its connections as killed alike
	// (haproxy 2.6.12's line says K- too, measured).
	second, err := net.Dial("tcp", l.Addrs("main")[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	second.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(second, "ping")
	if _, err := io.ReadFull(second, make([]byte, 4)); err != nil {
		t.Fatalf("the second client's echo: %v", err)
	}
	if got := ask(t, admin, "shutdown sessions server masters/m1\n"); got != "\n" {
		t.Errorf("shutdown sessions server: %q, want the empty answer", got)
	}
	if _, err := second.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the client after shutdown sessions server read %v, want io.EOF", err)
	}
	if n, _, err = sink.ReadFrom(buf); err != nil {
		t.Fatalf("no log line for the second connection: %v", err)
	}
	if f := strings.Fields(string(buf[:n])); len(f) < 5 || f[len(f)-3] != "K-" {
		t.Errorf("log line %q after shutdown sessions server: want the termination state K- (haproxy's, measured)", buf[:n])
	}

	// The CLI connections: the TCP one closed from the admin socket, the
	// operator's, then one that closes itself.
	for _, h := range []struct {
		src string
		c   *cliConn
	}{{tcpLocal, tcpHeld}, {"unix:2", operHeld}} {
		if got := ask(t, admin, "shutdown session "+ids[h.src]+"\n"); got != "\n" {
			t.Errorf("shutdown session of the CLI connection from %s: %q, want the empty answer", h.src, got)
		}
		if rest, err := io.ReadAll(h.c.r); err != nil || len(rest) != 0 {
			t.Errorf("the CLI connection from %s after shutdown session: read %q, %v; want the end of the connection", h.src, rest, err)
		}
	}
	self := held("unix", admin)
	io.WriteString(self, "show sess\n")
	own := strings.TrimSpace(readUntil(t, self, "\n\n> "))
	own, _, _ = strings.Cut(own, ": proto=unix_stream src=unix:1 ")
	if !strings.HasPrefix(own, "0x") || strings.Contains(own, "\n") {
		t.Fatalf("the connection's own line in show sess not found: %q", own)
	}
	io.WriteString(self, "shutdown session "+own+"\n")
	if rest, err := io.ReadAll(self.r); err != nil || string(rest) != "\n> " {
		t.Errorf("a connection closing itself read %q, %v; want the answer and prompt, then the end", rest, err)
	}
	if got := ask(t, admin, "show sess\n"); strings.Count(got, "fe=GLOBAL") != 1 {
		t.Errorf("show sess after the CLI connections were closed: want the asking one only:\n%s", got)
	}
}

// cliConn is an interactive runtime API connection.
type cliConn struct {
	net.Conn
	r *bufio.Reader
}

// readUntil reads from c until what it read ends with suffix.
func readUntil(t *testing.T, c *cliConn, suffix string) string {
	t.Helper()
	var b strings.Builder
	for !strings.HasSuffix(b.String(), suffix) {
		ch, err := c.r.ReadByte()
		if err != nil {
			t.Fatalf("reading up to %q: %v (read %q)", suffix, err, b.String())
		}
		b.WriteByte(ch)
	}
	return b.String()
}

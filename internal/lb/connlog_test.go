package lb

import (
	"context"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/lb/logging"
	"github.com/vipstack/vipstack/internal/lb/logging/logtest"
	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/syncbuf"
)

// connLogConfig has four frontends with OpenShift's log-format (plus %U):
// to an echo server, to a server that says "bye" and closes, to a server
// that refuses, and to one that resets; one with option tcplog; and three
// with %bi/%bp and +Q quoting: to the echo server, to the refusing one,
// and to a backend whose server is in maintenance (the runtime API's), so
// never tried.
const connLogConfig = `global
  stats socket {{ADMIN}} mode 600 level admin
defaults
  mode tcp
  {{LOG}}
  retries 2
  timeout connect 1s
  timeout client 3s
  timeout server 3s
  log-format "%ci:%cp -> %fi:%fp [%t] %ft %b/%s %Tw/%Tc/%Tt %B %U %ts %ac/%fc/%bc/%sc/%rc %sq/%bq"
frontend echo
  bind 127.0.0.1:{{P1}}
  default_backend echo
frontend closer
  bind 127.0.0.1:{{P2}}
  default_backend closer
frontend dead
  bind 127.0.0.1:{{P3}}
  default_backend dead
frontend tcplog
  bind 127.0.0.1:{{P4}}
  option tcplog
  default_backend echo
frontend resetter
  bind 127.0.0.1:{{P5}}
  default_backend resetter
frontend quoted
  bind 127.0.0.1:{{P6}}
  log-format "Q ci=%{+Q}ci si=%{+Q}si sp=%{+Q}sp bi=%bi bp=%bp biq=%{+Q}bi bpq=%{+Q}bp s=%{+Q}s B=%{+Q}B ts=%{+Q}ts f=%{+Q}ft b=%{+Q}b"
  default_backend echo
frontend quoteddead
  bind 127.0.0.1:{{P7}}
  log-format "Q ci=%{+Q}ci si=%{+Q}si sp=%{+Q}sp bi=%bi bp=%bp biq=%{+Q}bi bpq=%{+Q}bp s=%{+Q}s ts=%{+Q}ts"
  default_backend dead
frontend nosrv
  bind 127.0.0.1:{{P8}}
  log-format "Q si=%{+Q}si sp=%{+Q}sp bi=%bi bp=%bp biq=%{+Q}bi bpq=%{+Q}bp s=%{+Q}s ts=%{+Q}ts"
  default_backend nosrv
backend echo
  server e1 {{ECHO}}
backend closer
  server c1 {{CLOSER}}
backend dead
  server d1 {{DEAD}}
backend resetter
  server r1 {{RESETTER}}
backend nosrv
  server n1 {{ECHO}}
`

// logMask keeps what two balancers must agree on from a line of the
// format above: the ports, the date and the times vary (Tc only as
// connected or not: -1).
var logMask = regexp.MustCompile(`^(\S+):\d+ -> (\S+):\d+ \[[^\]]+\] (\S+ \S+) \d+/(-1|\d+)/\d+ (.*)$`)

// logSourcePort masks %bp, the balancer's port on the server connection.
var logSourcePort = regexp.MustCompile(`(bp|bpq)=\d+`)

func maskLogLine(s string) string {
	if strings.HasPrefix(s, "Q ") {
		return logSourcePort.ReplaceAllString(s, "$1=PORT")
	}
	m := logMask.FindStringSubmatch(s)
	if m == nil {
		if strings.Contains(s, "[") { // tcplog: %ci:%cp [%t] ...
			re := regexp.MustCompile(`^(\S+):\d+ \[[^\]]+\] (\S+ \S+) \d+/(-1|\d+)/\d+ (.*)$`)
			if m := re.FindStringSubmatch(s); m != nil {
				tc := "Tc"
				if m[3] == "-1" {
					tc = "-1"
				}
				return m[1] + ":PORT [DATE] " + m[2] + " Tw/" + tc + "/Tt " + m[4]
			}
		}
		return "unparsed: " + s
	}
	tc := "Tc"
	if m[4] == "-1" {
		tc = "-1"
	}
	return m[1] + ":PORT -> " + m[2] + ":PORT [DATE] " + m[3] + " Tw/" + tc + "/Tt " + m[5]
}

// TestConnLogMatchesHaproxy runs haproxy 2.6 and vipstack with the same
// log-format and the same clients, and compares their connection lines,
// ports, dates and times masked: the termination states (-- whichever
// side ends first, SD, CD, cD, SC), byte counts, counters and retries,
// and option tcplog's format; then the aborts counted in the stats
// (cli_abrt, srv_abrt, eresp) and vipstack's metrics of them.
func TestConnLogMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	echo := startBackendFunc(t, "echo", func(c net.Conn) { io.Copy(c, c) }).addr.String()
	// closer answers a line and ends; resetter resets after reading one.
	closer := startBackendFunc(t, "closer", func(c net.Conn) {
		io.ReadFull(c, make([]byte, 6))
		c.Write([]byte("bye\n"))
	}).addr.String()
	resetter := startBackendFunc(t, "resetter", func(c net.Conn) {
		io.ReadFull(c, make([]byte, 6))
		c.(*net.TCPConn).SetLinger(0)
	}).addr.String()
	ports := freePorts(t, 9)
	dead := "127.0.0.1:" + ports[8]
	admin := filepath.Join(t.TempDir(), "admin.sock")
	conf := func(log string, ports []string) string {
		return strings.NewReplacer("{{LOG}}", log, "{{P1}}", ports[0], "{{P2}}", ports[1], "{{P3}}", ports[2], "{{P4}}", ports[3], "{{P5}}", ports[4],
			"{{P6}}", ports[5], "{{P7}}", ports[6], "{{P8}}", ports[7], "{{ADMIN}}", admin,
			"{{ECHO}}", echo, "{{CLOSER}}", closer, "{{DEAD}}", dead, "{{RESETTER}}", resetter).Replace(connLogConfig)
	}

	hports := ports[:8]
	hout := peers.HAProxy(t, conf("log stdout format raw local0", hports))

	// vipstack from the same text: its lines go to vout.
	cfg, err := haproxycfg.Parse("haproxy.cfg", []byte(conf("log stdout format raw local0", []string{"1", "2", "3", "4", "5", "6", "7", "8"})))
	if err != nil {
		t.Fatal(err)
	}
	for i := range cfg.Frontends {
		cfg.Frontends[i].Binds = []lbconfig.Bind{loopbackBind()}
	}
	var vout syncbuf.Buffer
	reg := prometheus.NewRegistry()
	l, err := New(Options{Stdout: &vout, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Shutdown(canceled()) })
	if err := l.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	vaddr := func(fe string) string { return l.Addrs(fe)[0].String() }
	// haproxy is up once a client's exchange is logged (and over: its
	// connection counted no more in the next line's %ac).
	waitHaproxy := time.Now().Add(bound)
	for !strings.Contains(hout.String(), " echo echo/e1 ") {
		if c, err := net.Dial("tcp", "127.0.0.1:"+hports[0]); err == nil {
			c.Write([]byte("up?\n"))
			io.ReadFull(c, make([]byte, 4))
			c.Close()
		}
		if time.Now().After(waitHaproxy) {
			t.Fatalf("haproxy did not start:\n%s", hout.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	// nosrv's only server goes into maintenance on both.
	if out := haproxyCommand(t, admin, "set server nosrv/n1 state maint"); strings.TrimSpace(out) != "" {
		t.Fatalf("haproxy: %q", out)
	}
	if err := l.SetServerAdmin("nosrv", "n1", stats.AdminMaint); err != nil {
		t.Fatal(err)
	}
	for _, b := range []*syncbuf.Buffer{hout, &vout} {
		for deadline := time.Now().Add(bound); !strings.Contains(b.String(), "backend nosrv has no server available!"); {
			if time.Now().After(deadline) {
				t.Fatalf("nosrv/n1 not in maintenance:\n%s", b.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	type scenario struct {
		name, fe string
		run      func(c *net.TCPConn)
	}
	readAll := func(c *net.TCPConn) { io.Copy(io.Discard, c) }
	scenarios := []scenario{
		{"the client ends first", "echo", func(c *net.TCPConn) {
			c.Write([]byte("hello\n"))
			io.ReadFull(c, make([]byte, 6))
		}},
		{"the server ends first", "closer", func(c *net.TCPConn) {
			c.Write([]byte("hello\n"))
			readAll(c)
		}},
		{"the server resets", "resetter", func(c *net.TCPConn) {
			c.Write([]byte("hello\n"))
			readAll(c)
		}},
		{"the client half-closes", "echo", func(c *net.TCPConn) {
			c.Write([]byte("abc"))
			c.CloseWrite()
			readAll(c)
		}},
		{"the client resets", "echo", func(c *net.TCPConn) {
			c.Write([]byte("abc"))
			io.ReadFull(c, make([]byte, 3))
			c.SetLinger(0)
		}},
		{"no server", "dead", func(c *net.TCPConn) {
			c.Write([]byte("hello\n"))
			readAll(c)
		}},
		{"the client stays silent past timeout client", "echo", func(c *net.TCPConn) {
			c.Write([]byte("hello\n"))
			readAll(c) // the balancer ends it after 3 s
		}},
		{"option tcplog", "tcplog", func(c *net.TCPConn) {
			c.Write([]byte("hello\n"))
			io.ReadFull(c, make([]byte, 6))
		}},
		{"%bi %bp, +Q", "quoted", func(c *net.TCPConn) {
			c.Write([]byte("hello\n"))
			io.ReadFull(c, make([]byte, 6))
		}},
		{"%bi %bp of a refused connect, +Q", "quoteddead", func(c *net.TCPConn) {
			c.Write([]byte("hello\n"))
			readAll(c)
		}},
		{"%bi %bp with no server tried, +Q", "nosrv", func(c *net.TCPConn) {
			c.Write([]byte("hello\n"))
			readAll(c)
		}},
	}
	feIndex := map[string]int{"echo": 0, "closer": 1, "dead": 2, "tcplog": 3, "resetter": 4, "quoted": 5, "quoteddead": 6, "nosrv": 7}
	lines := func(b *syncbuf.Buffer) []string {
		var out []string
		for _, s := range strings.Split(b.String(), "\n") {
			if s = strings.Trim(s, "\x00 "); s != "" && !strings.HasPrefix(s, "[") {
				out = append(out, s)
			}
		}
		return out
	}
	var want, got []string
	for _, sc := range scenarios {
		for _, side := range []struct {
			addr string
			buf  *syncbuf.Buffer
			into *[]string
		}{{"127.0.0.1:" + hports[feIndex[sc.fe]], hout, &want}, {vaddr(sc.fe), &vout, &got}} {
			before := len(lines(side.buf))
			c, err := net.DialTimeout("tcp", side.addr, bound)
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(bound))
			sc.run(c.(*net.TCPConn))
			c.Close()
			deadline := time.Now().Add(bound)
			for len(lines(side.buf)) == before {
				if time.Now().After(deadline) {
					t.Fatalf("%s: no log line from %s (dead %s, vipstack %v)\nhaproxy:\n%s\nvipstack:\n%s", sc.name, side.addr, dead, l.Snapshot().Frontends, hout.String(), vout.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			ls := lines(side.buf)
			for _, s := range ls[before:] {
				s = maskLogLine(s)
				if sc.fe == "dead" {
					// vipstack tries the next server at once where
					// haproxy waits a second: the client's bytes may
					// come after the close (%U 0).
					s = strings.Replace(s, "Tw/-1/Tt 0 6 SC", "Tw/-1/Tt 0 U SC", 1)
					s = strings.Replace(s, "Tw/-1/Tt 0 0 SC", "Tw/-1/Tt 0 U SC", 1)
				}
				*side.into = append(*side.into, sc.name+": "+s)
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("connection log lines (-haproxy +vipstack):\n%s", diff)
	}
	t.Logf("haproxy:\n%s", strings.Join(want, "\n"))

	// The aborts, counted on the servers and backends as haproxy counts
	// them (measured: echo's cli_abrt 2 for its CD and cD, resetter's
	// srv_abrt 1 and eresp 1 for its SD), and in vipstack's metrics.
	hcsv, vcsv := haproxyCommand(t, admin, "show stat"), l.Snapshot().CSV()
	metrics := gather(t, reg)
	for _, b := range []struct{ backend, server string }{{"echo", "e1"}, {"closer", "c1"}, {"dead", "d1"}, {"resetter", "r1"}, {"nosrv", "n1"}} {
		for _, sv := range []string{b.server, "BACKEND"} {
			pick := func(csv string) map[string]string {
				m := csvFields(t, csv, b.backend, sv)
				return map[string]string{"cli_abrt": m["cli_abrt"], "srv_abrt": m["srv_abrt"], "eresp": m["eresp"]}
			}
			want := pick(hcsv)
			if diff := cmp.Diff(want, pick(vcsv)); diff != "" {
				t.Errorf("%s/%s aborts (-haproxy +vipstack):\n%s", b.backend, sv, diff)
			}
			if sv == "BACKEND" {
				continue
			}
			for field, metric := range map[string]string{"cli_abrt": "client_aborts", "srv_abrt": "server_aborts", "eresp": "response_errors"} {
				k := `vipstack_lb_server_` + metric + `_total{backend="` + b.backend + `",server="` + b.server + `"}`
				if got := strconv.FormatFloat(metrics[k], 'f', -1, 64); got != want[field] {
					t.Errorf("%s = %s, want haproxy's %s %s", k, got, field, want[field])
				}
			}
		}
	}
}

// TestConnLogDontLogNull: with option dontlognull a client that sent
// nothing leaves no line; one that did, does; a reload that drops the
// format stops the lines.
func TestConnLogDontLogNull(t *testing.T) {
	a := startBackend(t, "a")
	cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a))
	cfg.Frontends[0].Log = &lbconfig.ConnLog{Format: "%f %b/%s %U %ts", DontLogNull: true}
	cfg.Frontends[0].LogTargets = rawStdout
	var out syncbuf.Buffer
	l := newLBOpts(t, Options{Clock: fakeClock(), Stdout: &out}, cfg)
	silent := dial(t, l, "fe")
	silent.greeting(t)
	silent.Close()
	eventually(t, "the silent client to end", func() bool { return l.serverStats(t, "be", "a").Sessions == 0 })
	talker := dial(t, l, "fe")
	talker.greeting(t)
	talker.echo(t, "hi")
	talker.Close()
	eventually(t, "a line", func() bool { return strings.Contains(out.String(), "\n") })
	if got, want := out.String(), "fe be/a 3 --\n"; got != want {
		t.Errorf("log = %q, want %q (the silent client's connection left out)", got, want)
	}
	// Without a format, haproxy's line at accept (dontlognull or not).
	cfg.Frontends[0].Log = nil
	if err := l.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	after := dial(t, l, "fe")
	after.greeting(t)
	after.Close()
	eventually(t, "the client to end", func() bool { return l.serverStats(t, "be", "a").Sessions == 0 })
	l.accessLog.Flush()
	connect := regexp.MustCompile(`^fe be/a 3 --\nConnect from 127\.0\.0\.1:\d+ to 127\.0\.0\.1:\d+ \(fe/TCP\)\n$`)
	if got := out.String(); !connect.MatchString(got) {
		t.Errorf("after a reload without a format, log = %q, want %v", got, connect)
	}
	// Without targets, nothing.
	before := out.String()
	cfg.Frontends[0].LogTargets = nil
	if err := l.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	last := dial(t, l, "fe")
	last.greeting(t)
	last.Close()
	eventually(t, "the client to end", func() bool { return l.serverStats(t, "be", "a").Sessions == 0 })
	l.accessLog.Flush()
	if got := out.String(); got != before {
		t.Errorf("after a reload without log targets, log = %q, want %q", got, before)
	}
}

// rawStdout is `log stdout format raw local0`: the lines alone.
var rawStdout = []lbconfig.LogTarget{{Network: "stdout", Raw: true, Facility: 16, Level: lbconfig.LevelDebug}}

// TestConnLogForcedShutdown: a forced shutdown logs every connection it
// closes once, the relayed one as killed (K-, as haproxy 2.6.12 logs the
// connections its hard-stop-after closes, measured: "fe2 be2/s2
// 1/0/1301 3 K-") and the one waiting in the queue as killed in the
// queue (KQ, haproxy's K for a stream it aborted itself, Q for the phase;
// haproxy leaves such clients in the kernel's backlog, with no line).
// Found in review: closeAll closed the queued clients without a line.
func TestConnLogForcedShutdown(t *testing.T) {
	a := startBackend(t, "a")
	cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a))
	cfg.MaxConn = 1
	cfg.Frontends[0].Log = &lbconfig.ConnLog{Format: "%f %b/%s %ts"}
	cfg.Frontends[0].LogTargets = rawStdout
	var out syncbuf.Buffer
	l := newLBOpts(t, Options{Clock: fakeClock(), Stdout: &out}, cfg)
	first := dial(t, l, "fe")
	first.greeting(t)
	second := dial(t, l, "fe")
	eventually(t, "the second client to queue", func() bool { return l.Snapshot().Frontends[0].Queued == 1 })
	l.Shutdown(canceled())
	for _, c := range []*client{first, second} {
		if !c.closed(t) {
			t.Error("a client was not closed by the forced shutdown")
		}
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	slices.Sort(got)
	if diff := cmp.Diff([]string{"fe -/<NOSRV> KQ", "fe be/a K-"}, got); diff != "" {
		t.Errorf("log lines (-want +got):\n%s", diff)
	}
}

// TestConnLogNoServerTimes: a client that finds no UP server is logged
// with the times haproxy 2.6 writes for it, -1/-1/0 (measured: %Tw is -1
// when the stream never reached a server's queue, %Tc -1 with no
// connect), and one refused by its only server with Tw 0, Tc -1.
func TestConnLogNoServerTimes(t *testing.T) {
	up := deadBackend(t, "up")
	cfg := tcpConfig(lbconfig.RoundRobin, srv("up", up))
	cfg.Frontends[0].Log = &lbconfig.ConnLog{Format: "%b/%s %Tw/%Tc/%Tt %ts"}
	cfg.Frontends[0].LogTargets = rawStdout
	var out syncbuf.Buffer
	l := newLBOpts(t, Options{Clock: fakeClock(), Stdout: &out}, cfg)
	// A client reads the end of its connection before its loop queues
	// the line (release runs after the loop's lock): wait for it.
	lines := func(n int) func() bool {
		return func() bool { l.accessLog.Flush(); return strings.Count(out.String(), "\n") >= n }
	}
	refused := dial(t, l, "fe")
	if !refused.closed(t) {
		t.Fatal("a client of a refusing server was not closed")
	}
	eventually(t, "the refused client's line", lines(1))
	if err := l.SetServerAdmin("be", "up", stats.AdminMaint); err != nil {
		t.Fatal(err)
	}
	nosrv := dial(t, l, "fe")
	if !nosrv.closed(t) {
		t.Fatal("a client with no server UP was not closed")
	}
	eventually(t, "the second client's line", lines(2))
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if diff := cmp.Diff([]string{"be/up 0/-1/0 SC", "be/<NOSRV> -1/-1/0 SC"}, got); diff != "" {
		t.Errorf("log lines (-want +got):\n%s", diff)
	}
}

// TestConnLogBlockedWriter: a connection log whose writer blocks (standard
// error to a full pipe) holds up no connection: 20 connections run to
// their end while it is blocked; the lines past the buffer are dropped
// and counted, and the others come out once the writer takes them.
func TestConnLogBlockedWriter(t *testing.T) {
	a := startBackend(t, "a")
	cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a))
	// 100 kB lines: the first is in the blocked write, ten more fit the
	// 1 MiB buffer, the other nine are dropped.
	cfg.Frontends[0].Log = &lbconfig.ConnLog{Format: strings.Repeat("x", 100_000) + " %U"}
	cfg.Frontends[0].LogTargets = rawStdout
	w := logtest.NewGateWriter()
	l := newLBOpts(t, Options{Clock: fakeClock(), Stdout: w}, cfg)
	var once sync.Once
	release := func() { once.Do(func() { close(w.Open) }) }
	t.Cleanup(release) // before Shutdown: a relay blocked in the writer would hold it up
	for i := range 20 {
		cl := dial(t, l, "fe")
		if g := cl.greeting(t); g != "a" {
			t.Fatalf("client %d: greeting %q with the log writer blocked", i, g)
		}
		cl.echo(t, "hi")
		cl.Close()
		eventually(t, "the connection to end", func() bool { return l.serverStats(t, "be", "a").Sessions == 0 })
		if i == 0 {
			// The first line alone is in the blocked write.
			eventually(t, "the writer to block", func() bool { return w.Entered.Load() == 1 })
		}
	}
	eventually(t, "every line to be queued or dropped", func() bool {
		return l.accessLog.Queued()+1+int(l.accessLog.Dropped()) == 20
	})
	release()
	l.accessLog.Flush()
	if got, dropped := w.Lines(), l.accessLog.Dropped(); got != 11 || dropped != 9 {
		t.Errorf("%d lines written, %d dropped; want 11 and 9", got, dropped)
	}
}

// TestConnLogSource: %bi:%bp is the balancer's end of the server
// connection, the address the server saw its client at; a format without
// them leaves the lookup out of the relay (needSource).
func TestConnLogSource(t *testing.T) {
	seen := make(chan string, 1)
	a := startBackendFunc(t, "a", func(c net.Conn) {
		seen <- c.RemoteAddr().String()
		c.Write([]byte("a\n"))
		io.Copy(io.Discard, c)
	})
	cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a))
	cfg.Frontends[0].Log = &lbconfig.ConnLog{Format: "%bi:%bp %ts"}
	cfg.Frontends[0].LogTargets = rawStdout
	var out syncbuf.Buffer
	l := newLBOpts(t, Options{Clock: fakeClock(), Stdout: &out}, cfg)
	c := dial(t, l, "fe")
	c.greeting(t)
	c.Close()
	var remote string
	select {
	case remote = <-seen:
	case <-time.After(bound):
		t.Fatal("the server saw no connection")
	}
	eventually(t, "a line", func() bool { return strings.Contains(out.String(), "\n") })
	if got, want := out.String(), remote+" --\n"; got != want {
		t.Errorf("log = %q, want %q (the server's view of its client)", got, want)
	}

	for _, tt := range []struct {
		format string
		want   bool
	}{
		{lbconfig.TCPLogFormat, false},
		{"%ci:%cp -> %fi:%fp %si:%sp", false},
		{"%bi", true},
		{"%{+Q}bp", true},
	} {
		cl, err := logging.NewConnLog(&lbconfig.ConnLog{Format: tt.format}, &logging.Dests{{}})
		if err != nil {
			t.Fatal(err)
		}
		if cl.NeedSource != tt.want {
			t.Errorf("%q: NeedSource = %v, want %v", tt.format, cl.NeedSource, tt.want)
		}
	}
}

// TestSoftStopForced: a soft stop whose deadline comes with connections
// still open sends, before it closes them, haproxy's "Proxy NAME
// hard-stopped (N remaining conns will be closed)." (warning) for each
// frontend that has some, none for one that has none, then their lines
// (K-). Measured with haproxy 2.6.12, `hard-stop-after 1s`, SIGUSR1, one
// connection relayed by fe2 and none by fe, log in defaults:
//
//	<132>... Proxy fe stopped (cumulated conns: FE: 0, BE: 0).
//	<132>... Proxy fe2 stopped (cumulated conns: FE: 1, BE: 0).
//	<132>... Proxy be2 stopped (cumulated conns: FE: 0, BE: 1).
//	<132>... Proxy fe2 hard-stopped (1 remaining conns will be closed).
//	<134>... 127.0.0.1:51372 [...] fe2 be2/s2 1/0/1301 3 K- 1/1/0/0/0 0/0
//
// ("soft-stop running for too long, performing a hard-stop." goes to
// global's targets only.) Shutdown, haproxy's SIGTERM, sends neither
// kind of stop line (measured: SIGTERM sends no line at all).
func TestSoftStopForced(t *testing.T) {
	a := startBackend(t, "a")
	cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a))
	cfg.Frontends = append(cfg.Frontends, lbconfig.Frontend{Name: "idle", Binds: []lbconfig.Bind{loopbackBind()}, Backend: "be"})
	for i := range cfg.Frontends {
		cfg.Frontends[i].Log = &lbconfig.ConnLog{Format: "%f %b/%s %ts"}
		cfg.Frontends[i].LogTargets = rawStdout
	}
	cfg.Backends[0].LogTargets = rawStdout
	for _, soft := range []bool{true, false} {
		var out syncbuf.Buffer
		l := newLBOpts(t, Options{Clock: fakeClock(), Stdout: &out}, cfg)
		var cs []*client
		for range 2 {
			c := dial(t, l, "fe")
			c.greeting(t)
			cs = append(cs, c)
		}
		stop := l.Shutdown
		if soft {
			stop = l.SoftStop
		}
		if err := stop(canceled()); err != context.Canceled {
			t.Errorf("soft %v: %v, want context.Canceled", soft, err)
		}
		for _, c := range cs {
			if !c.closed(t) {
				t.Errorf("soft %v: a client was not closed", soft)
			}
		}
		want := []string{"fe be/a K-", "fe be/a K-"}
		if soft {
			want = append([]string{
				"Proxy fe stopped (cumulated conns: FE: 2, BE: 0).",
				"Proxy idle stopped (cumulated conns: FE: 0, BE: 0).",
				"Proxy be stopped (cumulated conns: FE: 0, BE: 2).",
				"Proxy fe hard-stopped (2 remaining conns will be closed).",
			}, want...)
		}
		got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("soft %v: log lines (-want +got):\n%s", soft, diff)
		}
	}
}

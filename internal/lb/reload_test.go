package lb

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// silentAPIServer listens but does not accept until serve: a check
// connects (the kernel completes the handshake) and then waits in the TLS
// handshake, as with an API server that is starting. serve makes it a TLS
// API server answering /readyz.
type silentAPIServer struct {
	ln   net.Listener
	addr string
	once sync.Once
}

func startSilentAPIServer(t *testing.T) *silentAPIServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &silentAPIServer{ln: ln, addr: ln.Addr().String()}
	t.Cleanup(func() { s.once.Do(func() { ln.Close() }) })
	return s
}

func (s *silentAPIServer) serve(t *testing.T) {
	t.Helper()
	s.once.Do(func() {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.Listener.Close()
		srv.Listener = s.ln
		srv.StartTLS()
		t.Cleanup(srv.Close)
	})
}

// seedCheck is a server with the seed's check: check check-ssl verify
// none inter 1s fall 2 rise 3.
func seedCheck(t *testing.T, name, addr string) lbconfig.Server {
	return lbconfig.Server{Name: name, Addr: mustAddrPort(t, addr), Weight: 1,
		Check: true, CheckSSL: true, Inter: time.Second, Fall: 2, Rise: 3}
}

// seedConfig is the seed's frontend, backend (option httpchk GET /readyz
// HTTP/1.0) and monitor-uri listen section.
func seedConfig(servers ...lbconfig.Server) *lbconfig.Config {
	c := webConfig(tcpConfig(lbconfig.RoundRobin, servers...))
	c.Backends[0].Check = lbconfig.HTTPCheck{Method: "GET", URI: "/readyz", Version: "HTTP/1.0"}
	return c
}

// TestReloadNewServersKeepMonitor: a reload that replaces every server
// (new addresses) keeps the monitor's 200 until the new servers have had
// their first checks, so a check script polling it does not move the API
// VIP away; when the first round fails (here: every probe times out after
// inter) it turns 503. haproxy 2.6's monitor-uri answered 200 throughout
// both such reloads of the seed's configuration (it does not follow the
// servers at all); before, vipstack answered 503 from the reload until a
// new server passed a check.
func TestReloadNewServersKeepMonitor(t *testing.T) {
	clk := fakeClock()
	var mu sync.Mutex
	var verdicts []bool
	l, err := New(Options{Clock: clk, OnHealthy: func(h bool) { mu.Lock(); verdicts = append(verdicts, h); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Shutdown(canceled()) })
	calls := func() []bool { mu.Lock(); defer mu.Unlock(); return slices.Clone(verdicts) }

	m0, m1 := startAPIServer(t, "m0", ""), startAPIServer(t, "m1", "")
	if err := l.Apply(seedConfig(seedCheck(t, "m0", m0.addr), seedCheck(t, "m1", m1.addr))); err != nil {
		t.Fatal(err)
	}
	monitor := "http://" + l.Addrs("health_check_http_url")[0].String() + "/haproxy_ready"
	eventually(t, "the monitor to turn 200", func() bool { return get(t, monitor, nil, "", "").Code == 200 })

	// Every server replaced; the new ones' first checks hang in the TLS
	// handshake: no verdict on them yet.
	n0, n1 := startSilentAPIServer(t), startSilentAPIServer(t)
	if err := l.Apply(seedConfig(seedCheck(t, "n0", n0.addr), seedCheck(t, "n1", n1.addr))); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if code := get(t, monitor, nil, "", "").Code; code != 200 {
			t.Fatalf("monitor poll %d after a reload to servers not checked yet: %d, want 200 (the verdict before the reload)", i, code)
		}
	}
	// They answer: their first checks pass, the monitor stays 200.
	n0.serve(t)
	n1.serve(t)
	eventually(t, "n0's first check", func() bool { return l.serverFor(t, "be", "n0").confirmed.Load() })
	if code := get(t, monitor, nil, "", "").Code; code != 200 {
		t.Fatalf("monitor after the new servers passed a check: %d, want 200", code)
	}
	if got := calls(); !slices.Equal(got, []bool{false, true}) {
		t.Errorf("OnHealthy calls %v, want [false true] (not yet at start, then healthy): the redirect was withdrawn during the reload", got)
	}

	// A new set that never answers: 200 until the first round of checks
	// ends, which their timeout (inter) bounds; then 503.
	d0, d1 := startSilentAPIServer(t), startSilentAPIServer(t)
	if err := l.Apply(seedConfig(seedCheck(t, "d0", d0.addr), seedCheck(t, "d1", d1.addr))); err != nil {
		t.Fatal(err)
	}
	if code := get(t, monitor, nil, "", "").Code; code != 200 {
		t.Fatalf("monitor after a reload to servers not checked yet: %d, want 200", code)
	}
	// Each new checker has armed its next tick and its probe's timeout.
	eventually(t, "the new checks to start", func() bool { return clk.Pending() == 4 })
	clk.Advance(time.Second)
	eventually(t, "the monitor to turn 503 after the new servers' first checks timed out", func() bool {
		return get(t, monitor, nil, "", "").Code == 503
	})
	if got := calls(); len(got) == 0 || got[len(got)-1] {
		t.Errorf("OnHealthy calls %v, want the last to be false", got)
	}
}

// TestReloadRenamedServerKeepsState: a server renamed on reload at the
// same address keeps its state and check history: a DOWN one stays DOWN
// (a new server would start UP and take clients), a checked one stays
// confirmed for the monitor, and its counters go on.
func TestReloadRenamedServerKeepsState(t *testing.T) {
	clk := fakeClock()
	a := startAPIServer(t, "a", "")
	d := startSilentAPIServer(t)
	l := newLB(t, clk, seedConfig(seedCheck(t, "a", a.addr), seedCheck(t, "d", d.addr)))
	eventually(t, "a's first check", func() bool { return checksDone(l.serverStats(t, "be", "a")) == 1 })
	// d's probes time out: two (fall 2; a new server starts at the edge
	// of UP, so the first takes it DOWN) and a's second check.
	// a's next tick; d's tick and its probe's timeout.
	eventually(t, "the checks to be armed", func() bool { return clk.Pending() == 3 })
	clk.Advance(time.Second)
	eventually(t, "d's first check", func() bool { return checksDone(l.serverStats(t, "be", "d")) == 1 })
	eventually(t, "a's second check", func() bool { return checksDone(l.serverStats(t, "be", "a")) == 2 })
	if s := l.serverStats(t, "be", "d"); s.Up {
		t.Fatalf("d after a timed out check: %+v", s)
	}
	before := l.serverStats(t, "be", "a")

	if err := l.Apply(seedConfig(seedCheck(t, "a2", a.addr), seedCheck(t, "d2", d.addr))); err != nil {
		t.Fatal(err)
	}
	// d2's first check hangs as d's did: its state is the one carried over.
	if s := l.serverStats(t, "be", "d2"); s.Up {
		t.Errorf("d renamed d2 came back UP on reload: %+v", s)
	}
	if !l.serverFor(t, "be", "a2").confirmed.Load() {
		t.Errorf("a renamed a2 is not confirmed: the monitor would wait for a check it passed before")
	}
	if got := l.serverStats(t, "be", "a2"); checksDone(got) < checksDone(before) {
		t.Errorf("a renamed a2 lost its check history: %d checks, had %d", checksDone(got), checksDone(before))
	}
}

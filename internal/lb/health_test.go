package lb

import (
	"crypto/tls"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
	"github.com/vipstack/vipstack/internal/syncbuf"
)

// apiServer is a TLS backend like kube-apiserver: /readyz answers "ok",
// / answers its name.
type apiServer struct {
	name string
	addr string
	srv  *httptest.Server
}

func startAPIServer(t *testing.T, name, addr string) *apiServer {
	t.Helper()
	a := &apiServer{name: name}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			io.WriteString(w, "ok")
			return
		}
		io.WriteString(w, name)
	})
	s := httptest.NewUnstartedServer(h)
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	if addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		s.Listener.Close()
		s.Listener = ln
	}
	s.StartTLS()
	a.srv, a.addr = s, s.Listener.Addr().String()
	t.Cleanup(s.Close)
	return a
}

func checksDone(s stats.ServerStats) uint64 {
	var n uint64
	for _, v := range s.CheckResults {
		n += v
	}
	return n
}

// httpsGet fetches / through the LB and returns the body: the backend's
// name.
func httpsGet(t *testing.T, addr string) string {
	t.Helper()
	c := &http.Client{Timeout: bound, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}}
	resp, err := c.Get("https://" + addr + "/")
	if err != nil {
		t.Fatalf("GET through the LB: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestHealthLeaveRejoin is the seed's backend (option httpchk GET /readyz
// HTTP/1.0, check check-ssl verify none inter 1s fall 2 rise 3) in front
// of three TLS API servers: a stopped server leaves after fall checks
// (inter x fall) and rejoins after rise checks (inter x rise) once it is
// back, and traffic follows at once.
func TestHealthLeaveRejoin(t *testing.T) {
	apis := []*apiServer{startAPIServer(t, "m0", ""), startAPIServer(t, "m1", ""), startAPIServer(t, "m2", "")}
	var servers []lbconfig.Server
	for _, a := range apis {
		servers = append(servers, lbconfig.Server{Name: a.name, Addr: mustAddrPort(t, a.addr), Weight: 1,
			Check: true, CheckSSL: true, Verify: false, Inter: time.Second, Fall: 2, Rise: 3})
	}
	cfg := tcpConfig(lbconfig.RoundRobin, servers...)
	cfg.Backends[0].Check = lbconfig.HTTPCheck{Method: "GET", URI: "/readyz", Version: "HTTP/1.0"}
	cfg.Backends[0].LogHealthChecks = true

	var logs syncbuf.Buffer
	clk := fakeClock()
	var healthMu sync.Mutex
	var health []bool
	l, err := New(Options{Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, nil)), OnHealthy: func(h bool) {
		healthMu.Lock()
		health = append(health, h)
		healthMu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Shutdown(canceled()) })
	if err := l.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	lbAddr := l.Addrs("fe")[0].String()

	round := 0 // checks done per server
	// tick moves the clock one inter and waits for every server's probe.
	tick := func() {
		t.Helper()
		if round > 0 {
			clk.Advance(time.Second)
		}
		round++
		for _, a := range apis {
			eventually(t, a.name+"'s check", func() bool { return checksDone(l.serverStats(t, "be", a.name)) == uint64(round) })
		}
	}
	status := func(name string) string { return l.serverStats(t, "be", name).Status }

	tick() // the first checks run at once
	for _, a := range apis {
		if s := l.serverStats(t, "be", a.name); s.Status != "UP" || s.CheckStatus != "L7OK" || s.CheckCode != 200 {
			t.Fatalf("%s after its first check: %+v", a.name, s)
		}
	}
	served := map[string]int{}
	for range 6 {
		served[httpsGet(t, lbAddr)]++
	}
	if diff := cmp.Diff(map[string]int{"m0": 2, "m1": 2, "m2": 2}, served); diff != "" {
		t.Fatalf("round robin over three UP servers (-want +got):\n%s", diff)
	}

	// Stop m1: it leaves after fall (2) failed checks.
	addr1 := apis[1].addr
	apis[1].srv.Close()
	tick()
	if got := status("m1"); got != "UP 1/2" {
		t.Fatalf("m1 after one failed check: %q, want \"UP 1/2\"", got)
	}
	tick()
	s1 := l.serverStats(t, "be", "m1")
	if s1.Status != "DOWN" || s1.CheckStatus != "L4CON" || s1.Downs != 1 || s1.ChecksFailed != 2 {
		t.Fatalf("m1 after two failed checks: %+v", s1)
	}
	served = map[string]int{}
	for range 6 {
		served[httpsGet(t, lbAddr)]++
	}
	if diff := cmp.Diff(map[string]int{"m0": 3, "m2": 3}, served); diff != "" {
		t.Fatalf("traffic with m1 DOWN (-want +got):\n%s", diff)
	}
	// Checks that fail while it is DOWN do not count in chkfail, as in
	// haproxy ("only counts checks failed when the server is up").
	tick()
	if s := l.serverStats(t, "be", "m1"); s.Status != "DOWN" || s.ChecksFailed != 2 {
		t.Fatalf("m1 after a third failed check: status %q, checks failed %d, want DOWN and 2", s.Status, s.ChecksFailed)
	}

	// Restart m1 on the same port: it rejoins after rise (3) good checks.
	apis[1] = startAPIServer(t, "m1", addr1)
	for i, want := range []string{"DOWN 1/3", "DOWN 2/3", "UP"} {
		tick()
		if got := status("m1"); got != want {
			t.Fatalf("m1 after %d good checks: %q, want %q", i+1, got, want)
		}
	}
	served = map[string]int{}
	for range 30 {
		served[httpsGet(t, lbAddr)]++
	}
	if served["m1"] == 0 || served["m0"]+served["m1"]+served["m2"] != 30 {
		t.Fatalf("traffic after m1 rejoined: %v", served)
	}

	// The monitor turned healthy with the first passed checks and stayed
	// so: two servers were always UP.
	healthMu.Lock()
	if diff := cmp.Diff([]bool{false, true}, health); diff != "" {
		t.Errorf("OnHealthy calls (-want +got):\n%s", diff)
	}
	healthMu.Unlock()

	// haproxy-style log lines: each check status change, and the state
	// changes.
	out := logs.String()
	for _, want := range []string{
		`msg="Health check for server be/m1 failed, reason: Layer4 connection problem" backend=be server=m1 check_status=L4CON`,
		`msg="Server be/m1 is DOWN, reason: Layer4 connection problem"`,
		`msg="Health check for server be/m1 succeeded, reason: Layer7 check passed" backend=be server=m1 check_status=L7OK`,
		`msg="Server be/m1 is UP, reason: Layer7 check passed"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s\nlog:\n%s", want, out)
		}
	}
	// Each of m1's checks that moved its health is logged, with the
	// state it left the server in, as haproxy logs them ("status: 1/2
	// UP", "0/3 DOWN", "1/3 DOWN", "2/3 DOWN", "2/2 UP").
	m1Checks := func() []string {
		var got []string
		for _, m := range regexp.MustCompile(`Health check for server be/m1 (\w+),.* status=("[^"]*"|\S+)`).FindAllStringSubmatch(logs.String(), -1) {
			got = append(got, m[1]+" "+strings.Trim(m[2], `"`))
		}
		return got
	}
	// The last check's line may follow its count by a moment.
	eventually(t, "m1's last check and its change to be logged", func() bool {
		return len(m1Checks()) >= 6 && strings.Contains(logs.String(), "Server be/m1 is UP")
	})
	out = logs.String()
	m1 := m1Checks()
	if diff := cmp.Diff([]string{"succeeded UP", "failed UP 1/2", "failed DOWN", "succeeded DOWN 1/3", "succeeded DOWN 2/3", "succeeded UP"}, m1); diff != "" {
		t.Errorf("m1's logged checks (-want +got):\n%s\nlog:\n%s", diff, out)
	}
	// As in haproxy's log, the check that moved the server comes before
	// the server's change (the last such check, for UP: m1's first check
	// passed too).
	last := func(re string) int {
		locs := regexp.MustCompile(re).FindAllStringIndex(out, -1)
		if len(locs) == 0 {
			return -1
		}
		return locs[len(locs)-1][0]
	}
	for _, c := range []struct{ check, change string }{
		{`Health check for server be/m1 failed,[^\n]* status=DOWN`, `Server be/m1 is DOWN`},
		{`Health check for server be/m1 succeeded,[^\n]* status=UP`, `Server be/m1 is UP`},
	} {
		if check, change := last(c.check), last(c.change); check < 0 || change < 0 || check > change {
			t.Errorf("%q is logged after %q, want before:\n%s", c.check, c.change, out)
		}
	}
	// m0 passed every check: only its first (a change from no status) is
	// logged.
	if n := strings.Count(out, "Health check for server be/m0"); n != 1 {
		t.Errorf("m0's checks were logged %d times, want 1 (only changes of status are)", n)
	}
}

// TestReloadKeepsHealth: a DOWN server stays DOWN across a reload that
// changes its check settings, and needs rise good checks to come back.
func TestReloadKeepsHealth(t *testing.T) {
	a := startBackend(t, "a")
	dead := deadBackend(t, "dead")
	clk := fakeClock()
	check := func(rise int) *lbconfig.Config {
		s := lbconfig.Server{Name: "d", Addr: dead.addr, Weight: 1, Check: true, Inter: time.Second, Fall: 1, Rise: rise}
		return tcpConfig(lbconfig.RoundRobin, srv("a", a), s)
	}
	l := newLB(t, clk, check(2))
	eventually(t, "d's first check", func() bool { return checksDone(l.serverStats(t, "be", "d")) == 1 })
	if s := l.serverStats(t, "be", "d"); s.Up || s.CheckStatus != "L4CON" {
		t.Fatalf("d after a refused check: %+v", s)
	}
	if err := l.Apply(check(3)); err != nil {
		t.Fatal(err)
	}
	if s := l.serverStats(t, "be", "d"); s.Up {
		t.Fatalf("d came back UP after a reload: %+v", s)
	}
	// The new checker probes at once: still refused, still DOWN.
	eventually(t, "d's new checker to probe", func() bool { return checksDone(l.serverStats(t, "be", "d")) == 2 })
	if s := l.serverStats(t, "be", "d"); s.Up {
		t.Fatalf("d after its new checker's first check: %+v", s)
	}
	// Back, it needs the new rise of 3.
	dead.restart(t)
	for i, want := range []string{"DOWN 1/3", "DOWN 2/3", "UP"} {
		clk.Advance(time.Second)
		eventually(t, "d's next check", func() bool { return checksDone(l.serverStats(t, "be", "d")) == uint64(3+i) })
		if got := l.serverStats(t, "be", "d").Status; got != want {
			t.Fatalf("d after %d good checks: %q, want %q", i+1, got, want)
		}
	}
}

func mustAddrPort(t *testing.T, s string) netip.AddrPort {
	t.Helper()
	a, err := net.ResolveTCPAddr("tcp", s)
	if err != nil {
		t.Fatal(err)
	}
	return a.AddrPort()
}

// TestHealthChecksLoggedOnlyWithOption: without `option log-health-checks`
// no check result is logged; a server's UP/DOWN changes always are.
func TestHealthChecksLoggedOnlyWithOption(t *testing.T) {
	dead := deadBackend(t, "dead")
	var logs syncbuf.Buffer
	clk := fakeClock()
	l, err := New(Options{Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Shutdown(canceled()) })
	cfg := tcpConfig(lbconfig.RoundRobin, lbconfig.Server{Name: "d", Addr: dead.addr, Weight: 1, Check: true, Inter: time.Second, Fall: 1, Rise: 1})
	if err := l.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	eventually(t, "d's first check", func() bool { return checksDone(l.serverStats(t, "be", "d")) == 1 })
	// A second check: the first one's handling, log included, is done
	// once the second is counted.
	clk.Advance(time.Second)
	eventually(t, "d's second check", func() bool { return checksDone(l.serverStats(t, "be", "d")) == 2 })
	eventually(t, "d's DOWN to be logged", func() bool { return strings.Contains(logs.String(), "Server be/d is DOWN") })
	if out := logs.String(); strings.Contains(out, "Health check for server") {
		t.Errorf("a check result was logged without option log-health-checks:\n%s", out)
	}
}

package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/redirect"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestLBHelperProcess is `vipstack lb` run by TestLBNamespaces inside a
// namespace (the test binary re-executed), with the arguments from the
// environment, one per line.
func TestLBHelperProcess(t *testing.T) {
	helperProcess(t, "VIPSTACK_LB_HELPER_ARGS", "TestLBNamespaces", runLB)
}

// helperProcess runs a subcommand, as the test binary re-executed by a
// root test inside a namespace, with the arguments in the environment
// variable env, one per line; without them the test is skipped.
func helperProcess(t *testing.T, env, forTest string, run func(context.Context, []string, io.Writer, io.Writer) int) {
	args := os.Getenv(env)
	if args == "" {
		t.Skip("helper process for " + forTest)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, strings.Split(args, "\n"), os.Stdout, os.Stderr))
}

// nsAPIServer is a TLS API server in a host's namespace on port (default
// 6443): /readyz answers "ok", anything else the server's name. With
// delay, it completes TCP handshakes at once but answers TLS only after
// delay, as an API server that is starting.
type nsAPIServer struct {
	name  string
	h     *testnet.Host
	port  int
	delay time.Duration
	srv   *httptest.Server
	timer *time.Timer // the delayed start, if any
}

func (a *nsAPIServer) start(t *testing.T) {
	t.Helper()
	port := a.port
	if port == 0 {
		port = 6443
	}
	var ln net.Listener
	if err := a.h.Do(func() (err error) {
		ln, err = net.Listen("tcp", fmt.Sprintf("[::]:%d", port))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	name := a.name
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			io.WriteString(w, "ok")
			return
		}
		io.WriteString(w, name)
	}))
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.Listener.Close()
	s.Listener = ln
	a.srv = s
	if a.delay > 0 {
		a.timer = time.AfterFunc(a.delay, s.StartTLS)
		return
	}
	s.StartTLS()
}

// nsDial connects from h's namespace.
func nsDial(h *testnet.Host, addr string) (net.Conn, error) {
	var c net.Conn
	err := h.Do(func() (err error) {
		c, err = net.DialTimeout("tcp", addr, 3*time.Second)
		return err
	})
	if err == nil {
		c.SetDeadline(time.Now().Add(5 * time.Second))
	}
	return c, err
}

// nsGet sends one HTTP/1.0 GET from h's namespace, over TLS when asked,
// and returns the status and body.
func nsGet(h *testnet.Host, addr, path string, useTLS bool, auth string) (int, string, error) {
	c, err := nsDial(h, addr)
	if err != nil {
		return 0, "", err
	}
	defer c.Close()
	if useTLS {
		c = tls.Client(c, &tls.Config{InsecureSkipVerify: true})
	}
	req := "GET " + path + " HTTP/1.0\r\n"
	if auth != "" {
		req += "Authorization: Basic " + auth + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// TestLBNamespaces runs `vipstack lb` with the seed's configuration in a
// network namespace, in front of two TLS API servers in two others, with
// the API VIP redirected to the frontend; a client in a fourth namespace
// uses IPv4, IPv6 and the VIP.
func TestLBNamespaces(t *testing.T) {
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 3, Client: true, Prefix: "vsUlb"})
	h1, client := topo.Hosts[0], topo.Client
	apis := []*nsAPIServer{{name: "m2", h: topo.Hosts[1]}, {name: "m3", h: topo.Hosts[2]}}
	for _, a := range apis {
		a.start(t)
	}
	defer func() {
		for _, a := range apis {
			a.srv.Close()
		}
	}()
	vip := "198.18.0.100"
	if _, err := h1.Run("ip", "addr", "add", vip+"/24", "dev", h1.Link, "nodad"); err != nil {
		t.Fatal(err)
	}
	lbV4, lbV6 := h1.IPv4.Addr().String(), h1.IPv6.Addr().String()
	m2, m3 := topo.Hosts[1], topo.Hosts[2]
	// The seed's stats socket, in the test's directory.
	sock := filepath.Join(t.TempDir(), "haproxy.sock")
	conf := func(extra string) string {
		return strings.Replace(fmt.Sprintf(`global
  stats socket /var/lib/haproxy/run/haproxy.sock  mode 600 level admin expose-fd listeners
defaults
  maxconn 2000
  mode    tcp
  log     /var/run/haproxy/haproxy-log.sock local0
  option  dontlognull
  retries 3
  timeout http-request 30s
  timeout queue        1m
  timeout connect      10s
  timeout client       86400s
  timeout server       86400s
  timeout tunnel       86400s
frontend  main
  bind :::9445 v4v6
  default_backend masters
listen health_check_http_url
  bind :::50936 v4v6
  mode http
  monitor-uri /haproxy_ready
  option dontlognull
listen stats
  bind %s:50000
  mode http
  stats enable
  stats hide-version
  stats uri /haproxy_stats
  stats refresh 30s
  stats auth Username:Password
backend masters
   option  httpchk GET /readyz HTTP/1.0
   option  log-health-checks
   balance roundrobin
   server m2 %s:6443 weight 1 verify none check check-ssl inter 1s fall 2 rise 3
   server m3 [%s]:6443 weight 1 verify none check check-ssl inter 1s fall 2 rise 3
%s`, lbV4, m2.IPv4.Addr(), m3.IPv6.Addr(), extra), "/var/lib/haproxy/run/haproxy.sock", sock, 1)
	}
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(conf("")), 0o644); err != nil {
		t.Fatal(err)
	}
	var out syncbuf.Buffer
	cmd := h1.Command(os.Args[0], "-test.run=^TestLBHelperProcess$")
	cmd.Env = append(os.Environ(), "VIPSTACK_LB_HELPER_ARGS="+strings.Join([]string{"-f", path, "--redirect", vip + ":6443", "--watch-interval", "0"}, "\n"))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := h1.Start(cmd); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if t.Failed() {
			t.Logf("vipstack lb output:\n%s", out.String())
		}
	}()

	frontends := []string{net.JoinHostPort(lbV4, "9445"), net.JoinHostPort(lbV6, "9445"), vip + ":6443"}
	monitor := net.JoinHostPort(lbV4, "50936")
	waitFor(t, "the monitor to answer 200", func() bool {
		code, _, err := nsGet(client, monitor, "/haproxy_ready", false, "")
		return err == nil && code == 200
	})
	waitFor(t, "the redirect to carry the VIP", func() bool {
		_, body, err := nsGet(client, vip+":6443", "/", true, "")
		return err == nil && (body == "m2" || body == "m3")
	})

	// Round robin over both servers, through IPv4, IPv6 and the VIP.
	for _, fe := range frontends {
		seen := map[string]int{}
		for range 4 {
			_, body, err := nsGet(client, fe, "/", true, "")
			if err != nil {
				t.Fatalf("GET via %s: %v", fe, err)
			}
			seen[body]++
		}
		if seen["m2"] != 2 || seen["m3"] != 2 {
			t.Errorf("via %s: servers %v, want m2 and m3 twice each", fe, seen)
		}
	}

	stats := func() string {
		t.Helper()
		code, body, err := nsGet(client, net.JoinHostPort(lbV4, "50000"), "/haproxy_stats;csv", false, "VXNlcm5hbWU6UGFzc3dvcmQ=")
		if err != nil || code != 200 {
			t.Fatalf("stats: %d %v", code, err)
		}
		return body
	}
	serverStatus := func(name string) string {
		for _, line := range strings.Split(stats(), "\n") {
			f := strings.Split(line, ",")
			if len(f) > 17 && f[0] == "masters" && f[1] == name {
				return f[17]
			}
		}
		return ""
	}
	// The runtime API on the stats socket: an operator takes m2 out of
	// service and clients through the VIP reach m3 alone; back to ready,
	// both again.
	runtimeAPI := func(cmd string) string {
		t.Helper()
		c, err := net.DialTimeout("unix", sock, 5*time.Second)
		if err != nil {
			t.Fatalf("stats socket: %v", err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, cmd+"\n"); err != nil {
			t.Fatalf("stats socket: %v", err)
		}
		b, err := io.ReadAll(c)
		if err != nil {
			t.Fatalf("stats socket %q: %v", cmd, err)
		}
		return string(b)
	}
	if got := runtimeAPI("set server masters/m2 state drain"); got != "\n" {
		t.Fatalf("set server masters/m2 state drain: %q, want an empty answer", got)
	}
	for range 4 {
		if _, body, err := nsGet(client, vip+":6443", "/", true, ""); err != nil || body != "m3" {
			t.Errorf("via the VIP with m2 drained: %q %v, want m3", body, err)
		}
	}
	if st := serverStatus("m2"); st != "DRAIN" {
		t.Errorf("m2's stats status when drained: %q, want DRAIN", st)
	}
	runtimeAPI("set server masters/m2 state maint")
	if got := runtimeAPI("show servers state masters"); !strings.Contains(got, " masters 1 m2 "+m2.IPv4.Addr().String()+" 0 1 ") {
		t.Errorf("show servers state with m2 in maint (op state 0, admin state 1):\n%s", got)
	}
	if st := serverStatus("m2"); st != "MAINT" {
		t.Errorf("m2's stats status in maint: %q, want MAINT", st)
	}
	runtimeAPI("set server masters/m2 state ready")
	seenAgain := map[string]bool{}
	for range 4 {
		if _, body, err := nsGet(client, vip+":6443", "/", true, ""); err == nil {
			seenAgain[body] = true
		}
	}
	if !seenAgain["m2"] || !seenAgain["m3"] {
		t.Errorf("after m2 is ready again: servers %v, want m2 and m3", seenAgain)
	}

	if code, _, err := nsGet(client, net.JoinHostPort(lbV4, "50000"), "/haproxy_stats", false, ""); err != nil || code != 401 {
		t.Errorf("stats without credentials: %d %v, want 401", code, err)
	}

	// Kill m3 under steady traffic: no request fails (connect retries go
	// to m2), and m3 leaves after fall failed checks.
	var failures, requests int
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, body, err := nsGet(client, frontends[1], "/", true, "")
			mu.Lock()
			requests++
			if err != nil || (body != "m2" && body != "m3") {
				failures++
			}
			mu.Unlock()
		}
	}()
	// The stats page's status column shows each check's effect ("UP
	// 1/2": one failed check of fall 2); polled far more often than the
	// checks run (inter 1s), it shows every step: m3 must leave on its
	// second failed check (fall 2) and rejoin on its third good one
	// (rise 3), which bounds the times by inter x fall and inter x rise.
	steps := func(until string) []string {
		t.Helper()
		var seen []string
		waitFor(t, "m3 to be "+until, func() bool {
			st := serverStatus("m3")
			if len(seen) == 0 || seen[len(seen)-1] != st {
				seen = append(seen, st)
			}
			return st == until
		})
		return seen
	}
	killed := time.Now()
	apis[1].srv.Close()
	if diff := cmp.Diff([]string{"UP", "UP 1/2", "DOWN"}, steps("DOWN")); diff != "" {
		t.Errorf("m3's status from the kill to DOWN (-want +got):\n%s", diff)
	}
	t.Logf("m3 DOWN %v after it was killed (inter 1s x fall 2)", time.Since(killed).Round(100*time.Millisecond))
	apis[1].start(t)
	restarted := time.Now()
	if diff := cmp.Diff([]string{"DOWN", "DOWN 1/3", "DOWN 2/3", "UP"}, steps("UP")); diff != "" {
		t.Errorf("m3's status from the restart to UP (-want +got):\n%s", diff)
	}
	t.Logf("m3 UP %v after it was restarted (inter 1s x rise 3)", time.Since(restarted).Round(100*time.Millisecond))
	close(stop)
	wg.Wait()
	if failures != 0 || requests == 0 {
		t.Errorf("%d of %d requests failed while m3 was killed and restarted, want 0", failures, requests)
	}
	t.Logf("%d requests during the kill and restart, %d failed", requests, failures)

	// A long-lived connection (a watch, say) that must survive a reload
	// that removes its server.
	long, err := nsDial(client, frontends[0])
	if err != nil {
		t.Fatal(err)
	}
	defer long.Close()
	long.SetDeadline(time.Now().Add(time.Minute))
	longTLS := tls.Client(long, &tls.Config{InsecureSkipVerify: true})
	longR := bufio.NewReader(longTLS)
	keepAliveGet := func() string {
		t.Helper()
		if _, err := io.WriteString(longTLS, "GET / HTTP/1.1\r\nHost: api\r\n\r\n"); err != nil {
			t.Fatalf("long connection: %v", err)
		}
		resp, err := http.ReadResponse(longR, nil)
		if err != nil {
			t.Fatalf("long connection: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return string(b)
	}
	longServer := keepAliveGet()

	// Reload on SIGHUP with a different server set; the long connection
	// stays.
	other := map[string]string{"m2": "m3", "m3": "m2"}[longServer]
	if err := os.WriteFile(path, []byte(strings.Replace(conf(""), "   server "+longServer, "   #server "+longServer, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, "the reload", func() bool { return !strings.Contains(stats(), "masters,"+longServer+",") })
	if got := keepAliveGet(); got != longServer {
		t.Errorf("long connection answered by %q after the reload, want %q", got, longServer)
	}
	for range 3 {
		if _, body, err := nsGet(client, frontends[0], "/", true, ""); err != nil || body != other {
			t.Errorf("after the reload: %q %v, want %s", body, err, other)
		}
	}

	// The last server dies: the monitor says 503 and the redirect leaves
	// the kernel (the VIP then refuses: nothing else listens on 6443 in
	// h1); it comes back with the server.
	table := redirect.TableName(netip.MustParseAddrPort(vip + ":6443"))
	hasTable := func() bool {
		t.Helper()
		out, err := h1.Run("nft", "list", "tables")
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(out, table)
	}
	var last *nsAPIServer
	for _, a := range apis {
		if a.name == other {
			last = a
		}
	}
	last.srv.Close()
	waitFor(t, "the monitor to answer 503", func() bool {
		code, _, err := nsGet(client, monitor, "/haproxy_ready", false, "")
		return err == nil && code == 503
	})
	waitFor(t, "the redirect to leave with the last server", func() bool { return !hasTable() })
	if _, err := nsDial(client, vip+":6443"); err == nil {
		t.Error("the VIP still answers on 6443 with no server UP")
	}
	last.start(t)
	waitFor(t, "the redirect to come back with the server", func() bool {
		_, body, err := nsGet(client, vip+":6443", "/", true, "")
		return err == nil && body == other
	})

	// A reload that replaces the only server by a new one (another name
	// and address: an API server on the same host, over the other family
	// and on port 6444, that is still starting: it completes TCP
	// handshakes but answers TLS only after 700 ms) keeps the monitor's 200
	// and the redirect until the new server's first check has a verdict:
	// keepalived's check script polls the monitor, and a 503 there would
	// move the API VIP on every such reload. haproxy 2.6 answers 200
	// throughout (measured); vipstack answered 503 from the reload until a
	// new server passed a check.
	srvHost := map[string]*testnet.Host{"m2": m2, "m3": m3}[other]
	newAddr := "[" + srvHost.IPv6.Addr().String() + "]:6444"
	if other == "m3" {
		newAddr = srvHost.IPv4.Addr().String() + ":6444"
	}
	newName := "n" + other
	slow := &nsAPIServer{name: other, h: srvHost, port: 6444, delay: 700 * time.Millisecond}
	slow.start(t)
	defer slow.srv.Close()
	defer slow.timer.Stop()
	lines := strings.Split(conf(""), "\n")
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "   server "+longServer+" "):
			lines[i] = ""
		case strings.HasPrefix(l, "   server "+other+" "):
			lines[i] = "   server " + newName + " " + newAddr + " weight 1 verify none check check-ssl inter 1s fall 2 rise 3"
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGHUP)
	checkStatus := func(name string) string {
		for _, line := range strings.Split(stats(), "\n") {
			f := strings.Split(line, ",")
			if len(f) > 36 && f[0] == "masters" && f[1] == name {
				return f[36]
			}
		}
		return "(absent)"
	}
	samples := 0
	deadline := time.Now().Add(20 * time.Second)
	for st := ""; st != "L7OK"; st = checkStatus(newName) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (%s) has check status %q 20 s after the reload, want L7OK", newName, newAddr, st)
		}
		code, _, err := nsGet(client, monitor, "/haproxy_ready", false, "")
		if err != nil || code != 200 {
			t.Fatalf("monitor during the reload to a new server: %d %v, want 200 (the verdict before the reload)", code, err)
		}
		if !hasTable() {
			t.Fatal("the redirect left the kernel during the reload to a new server")
		}
		samples++
		time.Sleep(20 * time.Millisecond) // polling, bounded by deadline
	}
	if _, body, err := nsGet(client, vip+":6443", "/", true, ""); err != nil || body != other {
		t.Errorf("through the VIP after the reload to %s: %q %v, want %s", newName, body, err, other)
	}
	// Each sample is two requests into namespaces; a loaded machine (the
	// whole suite beside it) got 9 in the check's first second.
	if samples < 3 {
		t.Errorf("only %d samples before %s's first check passed: the window this step watches did not happen", samples, newName)
	}
	t.Logf("reload to %s at %s: monitor 200 and redirect in place over %d samples until its first check passed", newName, newAddr, samples)

	// SIGTERM: the redirect goes, the drain ends when the long
	// connection closes, exit status 0.
	cmd.Process.Signal(syscall.SIGTERM)
	waitFor(t, "the redirect to go", func() bool { return !hasTable() })
	long.Close()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("vipstack lb exited with %v, want status 0", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("vipstack lb did not exit after SIGTERM")
	}
	if _, err := nsDial(client, vip+":6443"); err == nil {
		t.Error("the VIP still answers on 6443 after exit")
	}
	for _, want := range []string{"Server masters/m3 is DOWN", "Server masters/m3 is UP", "redirect enabled", "redirect disabled: the load balancer is not healthy", "redirect removed", `reloading reason=SIGHUP`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// redirectLab is one host holding a VIP, with one-byte servers: the
// backend behind the frontend answers 'B', the API server on VIP:6443
// itself 'D'; a client in another namespace connects to the VIP.
type redirectLab struct {
	t      *testing.T
	h1     *testnet.Host
	client *testnet.Host
	vip    netip.AddrPort
	path   string // the balancer's haproxy.cfg
	cmd    *exec.Cmd
	out    syncbuf.Buffer
	exited chan struct{}
}

func newRedirectLab(t *testing.T, prefix string) *redirectLab {
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 1, Client: true, Prefix: prefix})
	x := &redirectLab{t: t, h1: topo.Hosts[0], client: topo.Client, vip: netip.MustParseAddrPort("198.18.0.100:6443"),
		path: filepath.Join(t.TempDir(), "haproxy.cfg"), exited: make(chan struct{})}
	if _, err := x.h1.Run("ip", "addr", "add", x.vip.Addr().String()+"/24", "dev", x.h1.Link, "nodad"); err != nil {
		t.Fatal(err)
	}
	x.h1.Greet(t, "127.0.0.1:16443", []byte{'B'})
	x.h1.Greet(t, x.vip.String(), []byte{'D'})
	return x
}

// config writes the balancer's configuration with the given frontend bind.
func (x *redirectLab) config(bind string) {
	conf := "defaults\n  mode tcp\n  timeout connect 2s\nfrontend main\n  bind " + bind + "\n  default_backend masters\n" +
		"backend masters\n  server b 127.0.0.1:16443 check inter 200ms fall 2 rise 1\n"
	if err := os.WriteFile(x.path, []byte(conf), 0o644); err != nil {
		x.t.Fatal(err)
	}
}

// start runs `vipstack lb --redirect VIP:6443` and waits until the VIP
// reaches the backend.
func (x *redirectLab) start() {
	t := x.t
	x.cmd = x.h1.Command(os.Args[0], "-test.run=^TestLBHelperProcess$")
	x.cmd.Env = append(os.Environ(), "VIPSTACK_LB_HELPER_ARGS="+strings.Join([]string{"-f", x.path, "--redirect", x.vip.String(), "--watch-interval", "0"}, "\n"))
	x.cmd.Stdout, x.cmd.Stderr = &x.out, &x.out
	if err := x.h1.StartFor(t, x.cmd); err != nil {
		t.Fatal(err)
	}
	go func() { x.cmd.Wait(); close(x.exited) }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("vipstack lb output:\n%s", x.out.String())
		}
	})
	waitFor(t, "the redirect to carry the VIP to the backend", func() bool { return x.answer() == 'B' })
	waitFor(t, "the log to say the redirect is on, with its lease", func() bool {
		return strings.Contains(x.out.String(), "redirect enabled: a server is UP") && strings.Contains(x.out.String(), "lease=5s")
	})
}

// answer is the byte the client gets from VIP:6443, 0 for none.
func (x *redirectLab) answer() byte {
	c, err := nsDial(x.client, x.vip.String())
	if err != nil {
		return 0
	}
	defer c.Close()
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return 0
	}
	return b[0]
}

// table is the redirect's table as nft lists it, "" when there is none.
func (x *redirectLab) table() string {
	out, err := x.h1.Run("nft", "list", "table", "inet", redirect.TableName(x.vip))
	if err != nil {
		return ""
	}
	return out
}

// TestLBCrashRedirectLapses: `vipstack lb --redirect` killed with SIGKILL
// cannot remove its table; the redirect's lease runs out and the VIP's
// clients reach the node's own API server on VIP:6443 again instead of a
// frontend nobody serves.
func TestLBCrashRedirectLapses(t *testing.T) {
	x := newRedirectLab(t, "vsUlc")
	x.config(":::9445 v4v6")
	x.start()

	// SIGKILL: no chance to remove the table.
	if err := x.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-x.exited
	if x.table() == "" {
		t.Fatal("the table is gone right after SIGKILL: nothing left to lapse")
	}
	waitFor(t, "the API server on VIP:6443 to answer after the lease ran out", func() bool { return x.answer() == 'D' })
	var live bool
	if err := x.h1.Do(func() (err error) { live, err = redirect.New(x.vip, 9445).Live(); return err }); err != nil || live {
		t.Errorf("after the lapse: Live() = %v, %v; want false", live, err)
	}
}

// TestLBReloadMovesRedirect: a reload that moves the frontend to another
// port takes the redirect along; one that leaves no wildcard frontend is
// refused whole, and the VIP keeps working.
func TestLBReloadMovesRedirect(t *testing.T) {
	x := newRedirectLab(t, "vsUlm")
	x.config(":::9445 v4v6")
	x.start()

	// Each move, with a client connecting to VIP:6443 back to back: none
	// may go unanswered. The frontend keeps its old port until the
	// redirect has moved; it used to close it first, and measured on the
	// node agent (helper ae) 0 to 6 of about 2,800 connections per move
	// were refused.
	move := func(bind string, port int) {
		t.Helper()
		var ok, bad atomic.Int64
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			// Bounded: at most 20000 connections or 20 s.
			for n, end := 0, time.Now().Add(20*time.Second); n < 20000 && time.Now().Before(end); n++ {
				select {
				case <-stop:
					return
				default:
				}
				if x.answer() == 'B' {
					ok.Add(1)
				} else {
					bad.Add(1)
				}
			}
		}()
		time.Sleep(200 * time.Millisecond) // connections before the reload, not a timer of ours
		const closed = "the load balancer no longer listens on the old port"
		closes := strings.Count(x.out.String(), closed)
		x.config(bind)
		x.cmd.Process.Signal(syscall.SIGHUP)
		to := fmt.Sprintf("redirect to :%d", port)
		waitFor(t, "the redirect to follow the frontend to "+to, func() bool { return strings.Contains(x.table(), to) })
		// Through the close of the old port: connections the old redirect
		// sent there must not be refused when it closes.
		waitFor(t, "the old port to close", func() bool { return strings.Count(x.out.String(), closed) > closes })
		time.Sleep(200 * time.Millisecond) // and after it
		close(stop)
		<-done
		if bad.Load() != 0 || ok.Load() == 0 {
			t.Errorf("moving the frontend to %s: %d connections to the VIP answered, %d not; want none unanswered", bind, ok.Load(), bad.Load())
		}
	}
	move(":9446", 9446)
	// The log names the port the redirect now sends to (it named the
	// first one for the life of the process).
	waitFor(t, "the log to say the redirect goes to 9446", func() bool {
		return strings.Contains(x.out.String(), `msg="redirect enabled: a server is UP" redirect=198.18.0.100:6443 to_port=9446`)
	})
	move(":::9445 v4v6", 9445)
	move(":9446", 9446)
	if got := x.answer(); got != 'B' {
		t.Fatalf("after the move the VIP answered %q, want the backend's 'B'", got)
	}

	x.config(x.vip.Addr().String() + ":9447")
	x.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, "the reload to be refused", func() bool {
		return strings.Contains(x.out.String(), `msg="reload failed: keeping the running configuration" err="--redirect: no frontend listens on every local IPv4 address`)
	})
	if got := x.answer(); got != 'B' || !strings.Contains(x.table(), "redirect to :9446") {
		t.Errorf("after the refused reload the VIP answered %q with the table:\n%s\nwant 'B' through :9446", got, x.table())
	}
	if c, err := nsDial(x.client, x.vip.Addr().String()+":9447"); err == nil {
		c.Close()
		t.Error("the refused configuration's frontend on :9447 accepts connections")
	}
}

// TestLBFailedStartKeepsRedirect: a second `vipstack lb --redirect` for
// the same VIP that cannot start (the first holds its ports) exits 1
// without touching the redirect, which is the first one's: it removed the
// table on its way out, and the VIP went to the node's API server until
// the first renewed its lease.
func TestLBFailedStartKeepsRedirect(t *testing.T) {
	x := newRedirectLab(t, "vsUlf")
	x.config(":::9445 v4v6")
	x.start()

	second := x.h1.Command(os.Args[0], "-test.run=^TestLBHelperProcess$")
	second.Env = append(os.Environ(), "VIPSTACK_LB_HELPER_ARGS="+strings.Join([]string{"-f", x.path, "--redirect", x.vip.String(), "--watch-interval", "0"}, "\n"))
	out, err := second.CombinedOutput()
	if code := second.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), "another socket listens on [::]:9445") {
		t.Fatalf("the second balancer: exit %d (%v), want 1 for the port in use; output:\n%s", code, err, out)
	}
	if x.table() == "" {
		t.Fatal("the redirect's table is gone after a second balancer failed to start")
	}
	if got := x.answer(); got != 'B' {
		t.Errorf("after the failed start the VIP answered %q, want the backend's 'B'", got)
	}
	// A removed table would show at the first's next renewal.
	time.Sleep(1500 * time.Millisecond)
	if strings.Contains(x.out.String(), "renewing the redirect's lease failed") {
		t.Errorf("the first balancer found its table removed:\n%s", x.out.String())
	}
}

// TestLBRedirectWithoutNetAdmin: without CAP_NET_ADMIN the redirect cannot
// be installed; `vipstack lb --redirect` says so and exits 1 before it
// listens (it ran without its redirect, logging a failed enable every
// second).
func TestLBRedirectWithoutNetAdmin(t *testing.T) {
	x := newRedirectLab(t, "vsUln")
	x.config(":::9445 v4v6")
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) is needed to drop CAP_NET_ADMIN")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", x.h1.Name, "setpriv", "--inh-caps=-net_admin", "--bounding-set=-net_admin",
		os.Args[0], "-test.run=^TestLBHelperProcess$")
	cmd.Env = append(os.Environ(), "VIPSTACK_LB_HELPER_ARGS="+strings.Join([]string{"-f", x.path, "--redirect", x.vip.String(), "--watch-interval", "0"}, "\n"))
	out, _ := cmd.CombinedOutput()
	want := "vipstack lb: --redirect: nftables is not usable: redirect: list inet tables: netlink receive: operation not permitted (accepted: a process with CAP_NET_ADMIN"
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), want) {
		t.Fatalf("without CAP_NET_ADMIN: exit %d, want 1 with %q; output:\n%s", code, want, out)
	}
	if strings.Contains(string(out), "configuration applied") {
		t.Errorf("the balancer applied its configuration before refusing:\n%s", out)
	}
}

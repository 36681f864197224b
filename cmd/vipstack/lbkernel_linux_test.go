package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/lbkernel"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestLBKernelHelperProcess is `vipstack lb` run by TestLBKernelPath
// inside a namespace, with the arguments from the environment.
func TestLBKernelHelperProcess(t *testing.T) {
	helperProcess(t, "VIPSTACK_LBKERNEL_HELPER_ARGS", "TestLBKernelPath", runLB)
}

// kernelBackend is an HTTP server in a namespace that answers its name,
// and /readyz with 200, or 503 while down is set.
type kernelBackend struct {
	name string
	down atomic.Bool
	srv  *http.Server
}

func startKernelBackend(t *testing.T, h *testnet.Host, name, addr string) *kernelBackend {
	t.Helper()
	b := &kernelBackend{name: name}
	var ln net.Listener
	if err := h.Do(func() (err error) { ln, err = net.Listen("tcp", addr); return err }); err != nil {
		t.Fatal(err)
	}
	b.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" && b.down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, name)
	})}
	go b.srv.Serve(ln)
	t.Cleanup(func() { b.srv.Close() })
	return b
}

// TestLBKernelPath runs `vipstack lb --datapath kernel` in a namespace
// with three real backends (weights 1, 2, 3) and haproxy beside it on the
// same configuration: clients in another namespace land on the servers
// as haproxy sends them; a server failing its check leaves the map and
// gets no connection, and rejoins when it passes again; a server that
// refuses connections while its check passes leaves the map after the
// first few refused; a reload rewrites the weights; vipstack killed
// with SIGKILL leaves its table, which the next start replaces, and
// SIGTERM removes.
func TestLBKernelPath(t *testing.T) {
	testnet.RequireRoot(t)
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy is not installed")
	}
	topo := testnet.New(t, testnet.Options{Hosts: 1, Client: true, Prefix: "vnp"})
	h, client := topo.Hosts[0], topo.Client
	ip := h.IPv4.Addr().String()
	backends := map[string]*kernelBackend{}
	for i, name := range []string{"b1", "b2", "b3"} {
		backends[name] = startKernelBackend(t, h, name, fmt.Sprintf("%s:%d", ip, 8081+i))
	}
	// b1's check goes to a port of its own, which stays up when b1's
	// listener closes: only the kernel path's suspect set sees that.
	startKernelBackend(t, h, "b1check", ip+":8091")
	dir := t.TempDir()
	conf := func(port int) string {
		return fmt.Sprintf(`defaults
  mode tcp
  maxconn 1000
  timeout connect 2s
  timeout check 2s
  timeout client 1m
  timeout server 1m
frontend main
  bind %[1]s:%[2]d
  default_backend masters
backend masters
  option httpchk GET /readyz HTTP/1.0
  balance roundrobin
  server b1 %[1]s:8081 weight 1 check port 8091 inter 200ms fall 2 rise 1
  server b2 %[1]s:8082 weight 2 check inter 200ms fall 2 rise 1
  server b3 %[1]s:8083 weight 3 check inter 200ms fall 2 rise 1
`, ip, port)
	}
	vipCfg, haCfg := filepath.Join(dir, "vipstack.cfg"), filepath.Join(dir, "haproxy.cfg")
	for path, port := range map[string]int{vipCfg: 9000, haCfg: 9100} {
		if err := os.WriteFile(path, []byte(conf(port)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ha := h.Command("haproxy", "-db", "-f", haCfg)
	if err := h.StartFor(t, ha); err != nil {
		t.Fatal(err)
	}

	var out syncbuf.Buffer
	start := func() *exec.Cmd {
		cmd := h.Command(os.Args[0], "-test.run=^TestLBKernelHelperProcess$")
		cmd.Env = append(os.Environ(), "VIPSTACK_LBKERNEL_HELPER_ARGS="+strings.Join([]string{
			"-f", vipCfg, "--datapath", "kernel", "--watch-interval", "0", "--metrics-addr", "127.0.0.1:9652"}, "\n"))
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := h.StartFor(t, cmd); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	defer func() {
		if t.Failed() || os.Getenv("VNP_DEBUG") != "" {
			t.Logf("vipstack lb output:\n%s", out.String())
			if o, err := h.Run("nft", "list", "ruleset"); err == nil {
				t.Logf("nft list ruleset:\n%s", o)
			}
		}
	}()
	mapHas := func(port string) bool {
		o, err := h.Run("nft", "list", "map", "inet", lbkernel.TableName, "be0")
		return err == nil && strings.Contains(o, port)
	}
	present := func() bool {
		o, err := h.Run("nft", "list", "tables")
		return err == nil && strings.Contains(o, lbkernel.TableName)
	}
	count := func(port, n int) map[string]int {
		got := map[string]int{}
		for range n {
			_, body, err := nsGet(client, fmt.Sprintf("%s:%d", ip, port), "/", false, "")
			if err != nil {
				body = "error: " + err.Error()
			}
			got[body]++
		}
		return got
	}

	cmd := start()
	waitFor(t, "the kernel path's map with the three servers", func() bool { return mapHas("8081") && mapHas("8082") && mapHas("8083") })
	waitFor(t, "haproxy", func() bool { _, _, err := nsGet(client, ip+":9100", "/", false, ""); return err == nil })

	// Any 60 connections in a row are 10 cycles of the weights 1, 2, 3.
	want := map[string]int{"b1": 10, "b2": 20, "b3": 30}
	if diff := cmp.Diff(count(9100, 60), count(9000, 60)); diff != "" {
		t.Errorf("60 connections through vipstack's kernel path against haproxy's (-haproxy +vipstack):\n%s", diff)
	}
	if diff := cmp.Diff(want, count(9000, 60)); diff != "" {
		t.Errorf("60 connections through vipstack's kernel path (-want +got):\n%s", diff)
	}

	// A client on the balancer's host goes through the output hook.
	if _, body, err := nsGet(h, ip+":9000", "/", false, ""); err != nil || !strings.HasPrefix(body, "b") {
		t.Errorf("a client on the balancer's host: %q, %v; want a server's name", body, err)
	}

	// A keep-alive connection that landed on b2 stays with it when b2
	// leaves the map, as haproxy keeps established sessions.
	var onB2 *keepAliveConn
	dials := 0
	for dials < 6 && onB2 == nil {
		dials++
		c := dialKeepAlive(t, client, fmt.Sprintf("%s:9000", ip))
		if c.get(t) == "b2" {
			onB2 = c
		} else {
			c.Close()
		}
	}
	if onB2 == nil {
		t.Fatal("no connection of 6 landed on b2")
	}
	defer onB2.Close()

	// b2 fails its check: it leaves the map, and no connection reaches it.
	backends["b2"].down.Store(true)
	waitFor(t, "b2 to leave the map", func() bool { return !mapHas("8082") })
	if got := onB2.get(t); got != "b2" {
		t.Errorf("the established connection to b2 after b2 left the map: %q, want b2", got)
	}
	if diff := cmp.Diff(map[string]int{"b1": 10, "b3": 30}, count(9000, 40)); diff != "" {
		t.Errorf("40 connections with b2 DOWN (-want +got):\n%s", diff)
	}
	// It passes again: it rejoins.
	backends["b2"].down.Store(false)
	waitFor(t, "b2 to rejoin the map", func() bool { return mapHas("8082") })
	if diff := cmp.Diff(want, count(9000, 60)); diff != "" {
		t.Errorf("60 connections after b2 came back (-want +got):\n%s", diff)
	}

	// The nft counter saw every connection: 221 and the dials to b2 so
	// far.
	_, metrics, err := nsGet(h, "127.0.0.1:9652", "/metrics", false, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`vipstack_lb_kernel_connections_total{frontend="main"} %d`, 221+dials); !strings.Contains(metrics, want) {
		t.Errorf("metrics do not say %q:\n%s", want, grepLines(metrics, "kernel_connections"))
	}

	// b1 stops listening while its check passes: the first refused
	// connects put it in the suspect set, and the next connections avoid
	// it although the check still says UP.
	backends["b1"].srv.Close()
	got := count(9000, 60)
	refused := 0
	for k, n := range got {
		if strings.HasPrefix(k, "error") {
			refused += n
		}
	}
	if refused == 0 || refused > 10 {
		t.Errorf("60 connections right after b1 stopped listening: %v; want 1 to 10 refused (b1's slots until the suspect set's poll, every 50 ms)", got)
	}
	waitFor(t, "the suspect set's poll to take b1 out", func() bool {
		return strings.Contains(out.String(), "a server refused a connection") && !mapHas("8081")
	})
	if diff := cmp.Diff(map[string]int{"b2": 24, "b3": 36}, count(9000, 60)); diff != "" {
		t.Errorf("60 connections with b1 suspect (-want +got):\n%s", diff)
	}
	backends["b1"] = startKernelBackend(t, h, "b1", ip+":8081")
	waitFor(t, "b1 to rejoin the map once the suspicion ends", func() bool { return mapHas("8081") })

	// SIGKILL leaves the table; the next start replaces it, SIGTERM
	// removes it.
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if !present() {
		t.Fatal("no table after SIGKILL: expected it left behind, for the next start to sweep")
	}
	cmd = start()
	waitFor(t, "the restarted balancer to replace the table", func() bool {
		return strings.Contains(out.String(), "replacing a kernel-path table left by an earlier run") && mapHas("8083")
	})
	if diff := cmp.Diff(want, count(9000, 60)); diff != "" {
		t.Errorf("60 connections after the restart (-want +got):\n%s", diff)
	}
	// A reload with new weights rewrites the table.
	if err := os.WriteFile(vipCfg, []byte(strings.NewReplacer("weight 2", "weight 1", "weight 3", "weight 1").Replace(conf(9000))), 0o644); err != nil {
		t.Fatal(err)
	}
	// The reload first rewrites the backend's map for the new weights,
	// then installs the whole table again, which starts the round-robin
	// counter over: count only after the table's line says it is in.
	const installed = "data path of frontend main: kernel (nftables)"
	before := strings.Count(out.String(), installed)
	cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, "the reload's map of three equal slots", func() bool {
		if strings.Count(out.String(), installed) == before {
			return false
		}
		o, err := h.Run("nft", "list", "map", "inet", lbkernel.TableName, "be0")
		return err == nil && strings.Count(o, ":") == 4 // the type's and three elements'
	})
	if diff := cmp.Diff(map[string]int{"b1": 20, "b2": 20, "b3": 20}, count(9000, 60)); diff != "" {
		t.Errorf("60 connections after a reload to weights 1, 1, 1 (-want +got):\n%s", diff)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("vipstack lb exited with %v after SIGTERM, want 0", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("vipstack lb did not exit 20 s after SIGTERM")
	}
	if present() {
		t.Error("the kernel path's table is still there after vipstack lb exited")
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// keepAliveConn is an HTTP/1.1 connection from a namespace that stays
// open between requests.
type keepAliveConn struct {
	net.Conn
	r *bufio.Reader
}

func dialKeepAlive(t *testing.T, h *testnet.Host, addr string) *keepAliveConn {
	t.Helper()
	c, err := nsDial(h, addr)
	if err != nil {
		t.Fatal(err)
	}
	return &keepAliveConn{Conn: c, r: bufio.NewReader(c)}
}

// get sends GET / and returns the body (the server's name), or the error.
func (c *keepAliveConn) get(t *testing.T) string {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
		return "error: " + err.Error()
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return "error: " + err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "error: " + err.Error()
	}
	return string(b)
}

// TestLBKernelPathRemote: with the server on another host of the same
// bridge, the start is refused while forwarding is off; with it on the
// connection is masqueraded: the server answers the
// balancer, not the client straight (which would not know its address),
// so clients on a third host get their answers; balance source keeps a
// client on one server.
func TestLBKernelPathRemote(t *testing.T) {
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Client: true, Prefix: "vnp"})
	h, srv, client := topo.Hosts[0], topo.Hosts[1], topo.Client
	startKernelBackend(t, srv, "far", srv.IPv4.Addr().String()+":8081")
	startKernelBackend(t, srv, "far2", srv.IPv4.Addr().String()+":8082")
	path := filepath.Join(t.TempDir(), "h.cfg")
	cfg := fmt.Sprintf(`defaults
  mode tcp
  timeout connect 2s
  timeout client 1m
  timeout server 1m
frontend main
  bind %s:9000
  default_backend far
backend far
  server far %[2]s:8081 check inter 200ms
frontend sticky
  bind %[1]s:9001
  default_backend src
backend src
  balance source
  server far %[2]s:8081 check inter 200ms
  server far2 %[2]s:8082 check inter 200ms
`, h.IPv4.Addr(), srv.IPv4.Addr())
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	// Forwarding off (a new namespace's default): refused, naming it.
	refused := h.Command(os.Args[0], "-test.run=^TestLBKernelHelperProcess$")
	refused.Env = append(os.Environ(), "VIPSTACK_LBKERNEL_HELPER_ARGS="+strings.Join([]string{"-f", path, "--datapath", "kernel", "--watch-interval", "0"}, "\n"))
	if o, err := refused.CombinedOutput(); err == nil || !strings.Contains(string(o), "net.ipv4.ip_forward=1") {
		t.Errorf("start with ip_forward 0: %v, output %q; want a refusal naming net.ipv4.ip_forward=1", err, o)
	}
	if _, err := h.Run("sysctl", "-qw", "net.ipv4.ip_forward=1"); err != nil {
		t.Fatal(err)
	}
	var out syncbuf.Buffer
	cmd := h.Command(os.Args[0], "-test.run=^TestLBKernelHelperProcess$")
	cmd.Env = append(os.Environ(), "VIPSTACK_LBKERNEL_HELPER_ARGS="+strings.Join([]string{"-f", path, "--datapath", "kernel", "--watch-interval", "0"}, "\n"))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := h.StartFor(t, cmd); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("vipstack lb output:\n%s", out.String())
		}
	}()
	waitFor(t, "the kernel path's map", func() bool {
		o, err := h.Run("nft", "list", "map", "inet", lbkernel.TableName, "be0")
		return err == nil && strings.Contains(o, "8081")
	})
	for i := range 5 {
		if _, body, err := nsGet(client, h.IPv4.Addr().String()+":9000", "/", false, ""); err != nil || body != "far" {
			t.Errorf("connection %d through the balancer to the far server: %q, %v; want far", i, body, err)
		}
	}
	// balance source: one client, one server, connection after connection.
	seen := map[string]int{}
	for range 10 {
		_, body, err := nsGet(client, h.IPv4.Addr().String()+":9001", "/", false, "")
		if err != nil {
			body = "error: " + err.Error()
		}
		seen[body]++
	}
	if len(seen) != 1 || (seen["far"] != 10 && seen["far2"] != 10) {
		t.Errorf("10 connections of one client through balance source: %v; want all on one server", seen)
	}
}

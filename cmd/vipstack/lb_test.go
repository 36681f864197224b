package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testutil"
)

func TestLBCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.cfg")
	bad := filepath.Join(dir, "bad.cfg")
	os.WriteFile(good, []byte("defaults\n  mode tcp\nfrontend main\n  bind :::9445 v4v6\n  default_backend masters\nbackend masters\n  server m0 198.18.0.11:6443 check\n"), 0o644)
	os.WriteFile(bad, []byte("defaults\n  mode tcp\n  timeout connect 10parsecs\n"), 0o644)
	specific := filepath.Join(dir, "specific.cfg")
	os.WriteFile(specific, []byte("defaults\n  mode tcp\nfrontend main\n  bind 198.18.7.5:19445\n  default_backend masters\nbackend masters\n  server m0 198.18.0.11:6443 check\n"), 0o644)
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    string
		wantErrHas string
	}{
		{name: "seed", args: []string{"-f", "../../internal/haproxycfg/testdata/seed000.cfg", "--check"}, wantOut: "Configuration file is valid\n"}, // its log target is used now: no warning
		{name: "minimal", args: []string{"-c", "-f", good}, wantOut: "Configuration file is valid\n"},
		{name: "bad unit", args: []string{"-f", bad, "--check"}, wantCode: 1, wantErrHas: bad + ":3: "},
		{name: "missing", args: []string{"-f", filepath.Join(dir, "nope.cfg"), "--check"}, wantCode: 1, wantErrHas: "no such file"},
		{name: "bad flag", args: []string{"--redirect", "10.0.0.5", "-f", good}, wantCode: 2, wantErrHas: `--redirect "10.0.0.5"`},
		{name: "redirect to a frontend on one address", args: []string{"--redirect", "198.18.7.5:6443", "-f", specific}, wantCode: 1,
			wantErrHas: "vipstack lb: --redirect: no frontend listens on every local IPv4 address"},
		{name: "check: redirect to a frontend on one address", args: []string{"--check", "--redirect", "198.18.7.5:6443", "-f", specific}, wantCode: 1,
			wantErrHas: "vipstack lb: --redirect: no frontend listens on every local IPv4 address"},
		{name: "check: redirect", args: []string{"--check", "--redirect", "198.18.7.5:6443", "-f", good}, wantOut: "Configuration file is valid\n"},
		{name: "redirect of a loopback VIP", args: []string{"--redirect", "127.0.0.1:6443", "-f", good}, wantCode: 2,
			wantErrHas: "vipstack lb: --redirect: VIP 127.0.0.1:6443: want a unicast address a node can hold"},
		{name: "check: redirect of a multicast VIP", args: []string{"--check", "--redirect", "[ff02::5]:6443", "-f", good}, wantCode: 2,
			wantErrHas: "vipstack lb: --redirect: VIP [ff02::5]:6443: want a unicast address"},
		{name: "redirect of port 0", args: []string{"--redirect", "198.18.7.5:0", "-f", good}, wantCode: 2,
			wantErrHas: "vipstack lb: --redirect: VIP 198.18.7.5:0: port 0: want a port 1..65535"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			// Every case ends before the balancer runs; should one run,
			// it stops here and fails on its exit code.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			code := runLB(ctx, tt.args, &out, &errOut)
			if code != tt.wantCode || out.String() != tt.wantOut || !strings.Contains(errOut.String(), tt.wantErrHas) {
				t.Errorf("runLB(%q) = %d\nstdout: %q (want %q)\nstderr: %q (want it to contain %q)", tt.args, code, out.String(), tt.wantOut, errOut.String(), tt.wantErrHas)
			}
		})
	}
}

// freePorts returns loopback ports that were free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

// nameServer greets each connection with its name, then echoes.
func nameServer(t *testing.T, name string) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.WriteString(c, name+"\n")
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// lbRun is runLB running in a goroutine as `vipstack lb` runs; cancel
// stands for SIGTERM.
type lbRun struct {
	cancel context.CancelFunc
	done   chan int
	stderr syncbuf.Buffer
}

// startRunLB starts runLB with args; the test's end cancels it.
func startRunLB(t *testing.T, args ...string) *lbRun {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r := &lbRun{cancel: cancel, done: make(chan int, 1)}
	go func() { r.done <- runLB(ctx, args, io.Discard, &r.stderr) }()
	return r
}

// stop cancels the run (SIGTERM) and wants it to end with 0.
func (r *lbRun) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case code := <-r.done:
		if code != 0 {
			t.Fatalf("runLB = %d, want 0; stderr:\n%s", code, r.stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("runLB did not return after SIGTERM; stderr:\n%s", r.stderr.String())
	}
}

// dialFrontend connects to addr as soon as the balancer listens there.
func dialFrontend(t *testing.T, addr string) net.Conn {
	t.Helper()
	var c net.Conn
	waitFor(t, "the frontend at "+addr, func() bool {
		var err error
		c, err = net.Dial("tcp", addr)
		return err == nil
	})
	return c
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() error {
		if cond() {
			return nil
		}
		return fmt.Errorf("waiting for %s", what)
	})
}

// TestLBRun runs the subcommand: it serves, reloads when the file
// changes without dropping an established connection, and drains on
// cancellation (SIGTERM in main).
func TestLBRun(t *testing.T) {
	m0, m1 := nameServer(t, "m0"), nameServer(t, "m1")
	ports := freePorts(t, 3)
	fe, mon, metrics := ports[0], ports[1], ports[2]
	cfg := func(server int) string {
		return fmt.Sprintf(`defaults
  mode tcp
  retries 3
  timeout connect 5s
  timeout client 1m
  timeout server 1m
frontend main
  bind 127.0.0.1:%d
  default_backend masters
listen health_check_http_url
  bind 127.0.0.1:%d
  mode http
  monitor-uri /haproxy_ready
backend masters
  balance roundrobin
  server m 127.0.0.1:%d
`, fe, mon, server)
	}
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg(m0)), 0o644); err != nil {
		t.Fatal(err)
	}
	run := startRunLB(t, "-f", path, "--watch-interval", "10ms", "--metrics-addr", fmt.Sprintf("127.0.0.1:%d", metrics))
	stderr := &run.stderr

	greet := func(c net.Conn) string {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		return strings.TrimSpace(line)
	}
	long := dialFrontend(t, fmt.Sprintf("127.0.0.1:%d", fe))
	defer long.Close()
	if g := greet(long); g != "m0" {
		t.Fatalf("first connection greeted by %q, want m0 (stderr: %s)", g, stderr.String())
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/haproxy_ready", mon))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("monitor: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("metrics: %v %v", resp, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `vipstack_lb_server_up{backend="masters",server="m"} 1`) {
		t.Errorf("metrics lack the server's state:\n%s", body)
	}

	// Change the file (size changes too): the watcher reloads. Each
	// change replaces the file whole: the watcher polls every 10 ms and
	// may otherwise read it truncated, half written (a reload refused
	// more than the test counts).
	replace := func(text string) {
		t.Helper()
		tmp := path + ".new"
		if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	next := strings.Replace(cfg(m1), "retries 3", "retries 2", 1)
	replace(next)
	waitFor(t, "the reload", func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", fe))
		if err != nil {
			return false
		}
		defer c.Close()
		return greet(c) == "m1"
	})
	long.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(long, "still here\n")
	line, err := bufio.NewReader(long).ReadString('\n')
	if err != nil || line != "still here\n" {
		t.Fatalf("the established connection after reload: %q, %v", line, err)
	}

	// A broken file is refused: the log says so, and so do the metrics,
	// where an alert can see that the file is not what runs.
	replace(next + "  bogus_keyword 1\n")
	waitFor(t, "the refused reload", func() bool {
		return strings.Contains(stderr.String(), "reload failed: keeping the running configuration")
	})
	scrape := func() string {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	for _, want := range []string{`vipstack_lb_reloads_total{result="applied"} 1`, `vipstack_lb_reloads_total{result="refused"} 1`, "vipstack_lb_config_last_reload_successful 0"} {
		if got := scrape(); !strings.Contains(got, want+"\n") {
			t.Errorf("metrics after a refused reload lack %q:\n%s", want, got)
		}
	}
	if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", fe)); err != nil {
		t.Errorf("after the refused reload: %v", err)
	} else {
		if g := greet(c); g != "m1" {
			t.Errorf("after the refused reload a client was greeted by %q, want m1", g)
		}
		c.Close()
	}

	long.Close() // the drain then ends at once
	run.stop(t)
	for _, want := range []string{"vipstack lb running", `reloading reason="file changed"`, "configuration applied", "draining", "vipstack lb stopped"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, stderr.String())
		}
	}
}

func TestRedirectFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--to-port", "9445", "--monitor", "http://127.0.0.1:50936/x"}, "--vip is required"},
		{[]string{"--vip", "198.18.0.5", "--to-port", "9445", "--monitor", "http://127.0.0.1:50936/x"}, `"198.18.0.5" is not VIP:PORT`},
		{[]string{"--vip", "198.18.0.5:6443", "--to-port", "0", "--monitor", "http://127.0.0.1:50936/x"}, "--to-port 0: want 1..65535"},
		{[]string{"--vip", "198.18.0.5:6443", "--to-port", "9445", "--monitor", "127.0.0.1:50936"}, "want an http:// or https:// URL"},
		{[]string{"--vip", "198.18.0.5:6443", "--to-port", "9445", "--monitor", "http://x/", "--interval", "1ms"}, "want 100ms or more"},
		{[]string{"--vip", "127.0.0.1:6443", "--to-port", "9445", "--monitor", "http://x/"}, "loopback"},
	} {
		var stdout, stderr strings.Builder
		if code := runRedirect(context.Background(), tt.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tt.args, code, stderr.String(), tt.want)
		}
	}
}

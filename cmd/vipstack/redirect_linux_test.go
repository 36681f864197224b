package main

import (
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/redirect"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestRedirectHelperProcess is `vipstack redirect` run by TestRedirect
// inside a namespace, with the arguments from the environment.
func TestRedirectHelperProcess(t *testing.T) {
	helperProcess(t, "VIPSTACK_REDIRECT_HELPER_ARGS", "TestRedirect", runRedirect)
}

// TestRedirect runs `vipstack redirect` in a namespace with a VIP, a
// stand-in balancer that names itself on the balancer's port, another
// server on the VIP's own port, and a monitor that answers 200 or 503 on
// demand: a client of VIP:PORT reaches the balancer while the monitor
// answers 200 and the VIP's own port otherwise, and the table is gone
// after SIGTERM.
func TestRedirect(t *testing.T) {
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 1, Client: true, Prefix: "vsRdr"})
	h, client := topo.Hosts[0], topo.Client
	vip := netip.MustParseAddr("198.18.0.101")
	if _, err := h.Run("ip", "addr", "add", vip.String()+"/24", "dev", h.Link, "nodad"); err != nil {
		t.Fatal(err)
	}
	var healthy atomic.Bool
	serve := func(addr string, handler http.HandlerFunc) {
		var ln net.Listener
		if err := h.Do(func() (err error) { ln, err = net.Listen("tcp", addr); return err }); err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: handler}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
	}
	serve(":6443", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "own API") })
	serve(":9445", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "balancer") })
	serve("127.0.0.1:50936", func(w http.ResponseWriter, r *http.Request) {
		if !healthy.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	var out syncbuf.Buffer
	cmd := h.Command(os.Args[0], "-test.run=^TestRedirectHelperProcess$")
	cmd.Env = append(os.Environ(), "VIPSTACK_REDIRECT_HELPER_ARGS="+strings.Join([]string{
		"--vip", vip.String() + ":6443", "--to-port", "9445", "--monitor", "http://127.0.0.1:50936/haproxy_ready", "--interval", "200ms"}, "\n"))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := h.Start(cmd); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if t.Failed() {
			t.Logf("vipstack redirect output:\n%s", out.String())
		}
	}()
	answer := func(from *testnet.Host) string {
		_, body, err := nsGet(from, vip.String()+":6443", "/", false, "")
		if err != nil {
			return err.Error()
		}
		return body
	}
	table := redirect.TableName(netip.AddrPortFrom(vip, 6443))
	present := func() bool {
		o, err := h.Run("nft", "list", "tables")
		return err == nil && strings.Contains(o, table)
	}

	// Unhealthy from the start: no redirect, the VIP's own port answers.
	waitFor(t, "the first verdict (unhealthy)", func() bool { return strings.Contains(out.String(), "does not answer 200") })
	if present() {
		t.Error("a redirect with the monitor answering 503")
	}
	if got := answer(client); got != "own API" {
		t.Errorf("client with the monitor at 503: %q, want the own API", got)
	}
	// Healthy: remote clients (prerouting) and local ones (output) reach
	// the balancer.
	healthy.Store(true)
	waitFor(t, "the redirect", present)
	for _, from := range []*testnet.Host{client, h} {
		if got := answer(from); got != "balancer" {
			t.Errorf("client in %s with the monitor at 200: %q, want the balancer", from.Name, got)
		}
	}
	// Unhealthy again: the redirect goes after two failed polls.
	healthy.Store(false)
	waitFor(t, "the redirect to go", func() bool { return !present() })
	if got := answer(client); got != "own API" {
		t.Errorf("client after the monitor went 503: %q, want the own API", got)
	}
	// Healthy, then SIGTERM: the table is removed on exit.
	healthy.Store(true)
	waitFor(t, "the redirect again", present)
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("vipstack redirect exited with %v, want 0", err)
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("vipstack redirect did not exit 10 s after SIGTERM")
	}
	if present() {
		t.Error("the redirect table is still there after vipstack redirect exited")
	}
}

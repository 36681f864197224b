package lb

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
	"github.com/vipstack/vipstack/internal/peers"
)

// TestBackendDownsMatchHaproxy: a backend is DOWN while none of its
// servers is usable, and counts each change to DOWN in its chkdown,
// whatever made its last server unusable: a failed check, the runtime
// API's MAINT or a weight of 0 (measured with haproxy 2.6.12: be's
// chkdown 1 after its server's check failed, 2 after MAINT; be2's 1
// after weight 0). Both balancers go through the same steps; the two
// backends' status and chkdown are compared after each.
func TestBackendDownsMatchHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	a, b := startBackend(t, "a"), startBackend(t, "b")
	admin := filepath.Join(t.TempDir(), "admin.sock")
	conf := func(port string) string {
		return strings.NewReplacer("{{A}}", a.addr.String(), "{{B}}", b.addr.String(), "{{ADMIN}}", admin, "{{P}}", port).Replace(`global
  stats socket {{ADMIN}} mode 600 level admin
defaults
  mode tcp
  timeout connect 1s
  timeout client 3s
  timeout server 3s
frontend fe
  bind 127.0.0.1:{{P}}
  default_backend be
backend be
  server a {{A}} check inter 200ms fall 1 rise 1
backend be2
  server b {{B}}
`)
	}
	peers.HAProxy(t, conf(freePort(t)))
	l := newLBOpts(t, Options{}, parseOnLoopback(t, conf("1")))
	waitListening(t, "unix", admin)

	type state map[string]string // "be status", "be chkdown", ...
	read := func(csv string) state {
		st := state{}
		for _, be := range []string{"be", "be2"} {
			m := csvFields(t, csv, be, "BACKEND")
			st[be+" status"], st[be+" chkdown"] = m["status"], m["chkdown"]
		}
		return st
	}
	hread := func() state { return read(haproxyCommand(t, admin, "show stat")) }
	vread := func() state { return read(l.Snapshot().CSV()) }
	steps := []struct {
		name string
		do   func()
		want state // what both must reach
	}{
		{"start", func() {}, state{"be status": "UP", "be chkdown": "0", "be2 status": "UP", "be2 chkdown": "0"}},
		{"a's check fails", a.stop, state{"be status": "DOWN", "be chkdown": "1", "be2 status": "UP", "be2 chkdown": "0"}},
		{"a's check passes", func() { a.restart(t) }, state{"be status": "UP", "be chkdown": "1", "be2 status": "UP", "be2 chkdown": "0"}},
		{"a in MAINT", func() {
			haproxyCommand(t, admin, "set server be/a state maint")
			if err := l.SetServerAdmin("be", "a", stats.AdminMaint); err != nil {
				t.Fatal(err)
			}
		}, state{"be status": "DOWN", "be chkdown": "2", "be2 status": "UP", "be2 chkdown": "0"}},
		{"a ready, b's weight 0", func() {
			haproxyCommand(t, admin, "set server be/a state ready")
			haproxyCommand(t, admin, "set weight be2/b 0")
			if err := l.SetServerAdmin("be", "a", stats.AdminReady); err != nil {
				t.Fatal(err)
			}
			if err := l.SetServerWeight("be2", "b", 0); err != nil {
				t.Fatal(err)
			}
		}, state{"be status": "UP", "be chkdown": "2", "be2 status": "DOWN", "be2 chkdown": "1"}},
		{"b's weight 1", func() {
			haproxyCommand(t, admin, "set weight be2/b 1")
			if err := l.SetServerWeight("be2", "b", 1); err != nil {
				t.Fatal(err)
			}
		}, state{"be status": "UP", "be chkdown": "2", "be2 status": "UP", "be2 chkdown": "1"}},
	}
	for _, st := range steps {
		st.do()
		var h, v state
		for deadline := time.Now().Add(bound); ; {
			h, v = hread(), vread()
			if cmp.Equal(h, st.want) && cmp.Equal(v, st.want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: haproxy %v, vipstack %v, want both %v", st.name, h, v, st.want)
			}
			time.Sleep(50 * time.Millisecond) // checks every 200 ms, bounded
		}
	}
}

// TestBackendStateTimes: a backend's time since its last change and its
// time DOWN, on the LB's clock: every DOWN period adds to the downtime
// (however it ends), the current one while it lasts; a reload keeps the
// history of a backend it keeps and starts a new backend's, DOWN from the
// start without a change counted when it has no usable server.
func TestBackendStateTimes(t *testing.T) {
	a := startBackend(t, "a")
	clk := fakeClock()
	cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a))
	reg := prometheus.NewRegistry()
	l := newLBOpts(t, Options{Clock: clk, Registry: reg}, cfg)
	get := func(be string) [3]int64 {
		t.Helper()
		downs, last, down, ok := l.backendState(be, clk.Now())
		if !ok {
			t.Fatalf("no state for backend %s", be)
		}
		return [3]int64{int64(downs), last, down}
	}
	want := func(what string, be string, w [3]int64) {
		t.Helper()
		if g := get(be); g != w {
			t.Errorf("%s: %s downs, last change, downtime = %v, want %v", what, be, g, w)
		}
	}
	clk.Advance(5 * time.Second)
	want("UP for 5 s", "be", [3]int64{0, 5, 0})
	if err := l.SetServerAdmin("be", "a", stats.AdminMaint); err != nil {
		t.Fatal(err)
	}
	clk.Advance(3 * time.Second)
	want("DOWN (MAINT) for 3 s", "be", [3]int64{1, 3, 3})
	if err := l.SetServerAdmin("be", "a", stats.AdminReady); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	want("UP again for 2 s", "be", [3]int64{1, 2, 3})
	if err := l.SetServerWeight("be", "a", 0); err != nil {
		t.Fatal(err)
	}
	clk.Advance(4 * time.Second)
	want("DOWN (weight 0) for 4 s", "be", [3]int64{2, 4, 7})

	// A reload: be kept (still DOWN, weight 0 kept), be2 new with its
	// only server in... a weight of 0 from the file: DOWN from the start.
	cfg2 := tcpConfig(lbconfig.RoundRobin, srv("a", a))
	b2 := srv("b", startBackend(t, "b"))
	b2.Weight = 0
	cfg2.Backends = append(cfg2.Backends, lbconfig.Backend{Name: "be2", Balance: lbconfig.RoundRobin, Servers: []lbconfig.Server{b2}})
	if err := l.Apply(cfg2); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	want("be kept over the reload", "be", [3]int64{2, 5, 8})
	want("be2 new, DOWN from the start", "be2", [3]int64{0, 1, 1})
	if err := l.SetServerWeight("be", "a", 1); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	want("be UP after the weight's return", "be", [3]int64{2, 1, 8})
	m := gather(t, reg)
	for k, v := range map[string]float64{`vipstack_lb_backend_downs_total{backend="be"}`: 2, `vipstack_lb_backend_downs_total{backend="be2"}`: 0} {
		if g, ok := m[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}

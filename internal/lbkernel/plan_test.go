package lbkernel

import (
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/haproxycfg"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from Ruleset's output")

// seedish is the benchmark's configuration (seed 000 on loopback): a
// dual-stack TCP frontend to three checked servers, and a bulk one.
const seedish = `global
  stats socket /tmp/x.sock mode 600 level admin
defaults
  maxconn 4000
  mode    tcp
  retries 3
  timeout connect 10s
  timeout client  86400s
  timeout server  86400s
frontend main
  bind :::9545 v4v6
  default_backend masters
frontend bulk
  bind 127.0.0.1:9546
  default_backend iperf
listen health_check_http_url
  bind :::9547 v4v6
  mode http
  monitor-uri /haproxy_ready
backend masters
  option httpchk GET /readyz HTTP/1.0
  balance roundrobin
  server b1 127.0.0.1:8081 weight 1 check inter 1s fall 2 rise 3
  server b2 127.0.0.1:8082 weight 2 check inter 1s fall 2 rise 3
  server b3 127.0.0.1:8083 weight 3 check inter 1s fall 2 rise 3
backend iperf
  balance source
  server i1 [fd00::1]:5201
`

func parse(t *testing.T, text string) *Plan {
	t.Helper()
	cfg, err := haproxycfg.Parse("h.cfg", []byte(text))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	p, err := Build(cfg, Kernel)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return p
}

func TestRuleset(t *testing.T) {
	p := parse(t, seedish)
	targets := map[string][]Target{
		"masters": {
			{Name: "b1", Addr: netip.MustParseAddrPort("127.0.0.1:8081"), Weight: 1},
			{Name: "b2", Addr: netip.MustParseAddrPort("127.0.0.1:8082"), Weight: 2},
			{Name: "b3", Addr: netip.MustParseAddrPort("127.0.0.1:8083"), Weight: 3},
		},
		// iperf: none usable, its chain is empty.
	}
	p.DNATTimeouts = []uint32{120, 60, 432000, 120, 60, 30, 10, 10, 120, 300, 300}
	got := Ruleset(p, targets)
	path := filepath.Join("testdata", t.Name()+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("Ruleset (-want +got):\n%s", diff)
	}
}

func TestBuildPlan(t *testing.T) {
	p := parse(t, seedish)
	want := []Frontend{
		{Name: "main", Backend: "masters", Balance: "roundrobin", MaxConn: 4000,
			Binds: []Bind{{Addr: netip.MustParseAddrPort("[::]:9545"), IPv4: true, IPv6: true, Wildcard: true}}},
		{Name: "bulk", Backend: "iperf", Balance: "source", MaxConn: 4000,
			Binds: []Bind{{Addr: netip.MustParseAddrPort("127.0.0.1:9546"), IPv4: true}}},
	}
	if diff := cmp.Diff(want, p.Frontends, cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); diff != "" {
		t.Errorf("Frontends (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]bool{"masters": false, "iperf": true}, p.Remote); diff != "" {
		t.Errorf("Remote (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"masters": 4, "iperf": 6}, p.Family); diff != "" {
		t.Errorf("Family (-want +got):\n%s", diff)
	}
	// The monitor is mode http: not the kernel's, and not refused.
	var kernel []string
	for _, d := range p.Decisions {
		if d.Kernel {
			kernel = append(kernel, d.Proxy)
		}
	}
	if diff := cmp.Diff([]string{"frontend main", "frontend bulk"}, kernel); diff != "" {
		t.Errorf("kernel proxies (-want +got):\n%s", diff)
	}
	for _, n := range []string{"timeout client/server/tunnel", "does not retry a connect", "maxconn 4000 is not enforced by the kernel path"} {
		if !strings.Contains(strings.Join(p.Notes, "\n"), n) {
			t.Errorf("no note says %q; notes:\n%s", n, strings.Join(p.Notes, "\n"))
		}
	}
}

// TestBuildRefuses: with --datapath kernel a frontend that needs user
// space refuses the configuration, naming file and line, the proxy and
// the directive; with auto it stays with the relay and says why.
func TestBuildRefuses(t *testing.T) {
	base := func(front, back string) string {
		return "defaults\n  mode tcp\n  timeout connect 1s\n  timeout client 1m\n  timeout server 1m\n" +
			"frontend fe\n  bind 127.0.0.1:9000\n" + front + "  default_backend be\n" +
			"backend be\n" + back
	}
	srv := "  server s1 127.0.0.1:8001 check\n"
	tests := []struct {
		name       string
		cfg        string
		wantPos    string
		wantInMsg  []string
		wantKernel bool
	}{
		{name: "plain", cfg: base("", srv), wantKernel: true},
		{name: "leastconn", cfg: base("", "  balance leastconn\n"+srv), wantPos: "h.cfg:10",
			wantInMsg: []string{"frontend fe (backend be)", `"balance leastconn"`}},
		{name: "send-proxy", cfg: base("", "  server s1 127.0.0.1:8001 check send-proxy\n"), wantPos: "h.cfg:10",
			wantInMsg: []string{`"server s1 send-proxy (v1)"`, "PROXY header"}},
		{name: "server maxconn", cfg: base("", "  server s1 127.0.0.1:8001 maxconn 10\n"), wantPos: "h.cfg:10",
			wantInMsg: []string{`"server s1 maxconn/maxqueue"`}},
		{name: "tcp-request", cfg: base("  tcp-request content reject if { src 198.18.0.1 }\n", srv), wantPos: "h.cfg:",
			wantInMsg: []string{"frontend fe:", `"tcp-request"`}},
		{name: "consistent", cfg: base("", "  balance source\n  hash-type consistent\n"+srv), wantPos: "h.cfg:",
			wantInMsg: []string{`"hash-type consistent"`}},
		{name: "shutdown-sessions", cfg: base("", "  server s1 127.0.0.1:8001 check on-marked-down shutdown-sessions\n"), wantPos: "h.cfg:10",
			wantInMsg: []string{"on-marked-down shutdown-sessions"}},
		{name: "static-rr", cfg: base("", "  balance static-rr\n"+srv), wantPos: "h.cfg:10",
			wantInMsg: []string{`"balance static-rr"`, "slot map"}},
		{name: "first", cfg: base("", "  balance first\n"+srv), wantPos: "h.cfg:10",
			wantInMsg: []string{`"balance first"`}},
		{name: "bind socket options", cfg: strings.Replace(base("", srv), "bind 127.0.0.1:9000", "bind 127.0.0.1:9000 defer-accept backlog 64", 1), wantPos: "h.cfg:7",
			wantInMsg: []string{`"bind ... defer-accept backlog 64"`, "DNAT bypasses"}},
		{name: "proxy backlog", cfg: base("  backlog 100\n", srv), wantPos: "h.cfg:7",
			wantInMsg: []string{`"bind ... backlog 100"`}},
		{name: "mixed families", cfg: base("", srv+"  server s2 [fd00::2]:8001 check\n"), wantPos: "h.cfg:11",
			wantInMsg: []string{"server s2", "one address family"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := haproxycfg.Parse("h.cfg", []byte(tt.cfg))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			_, err = Build(cfg, Kernel)
			if tt.wantKernel != (err == nil) {
				t.Fatalf("Build(kernel) = %v, want error %v", err, !tt.wantKernel)
			}
			auto, aerr := Build(cfg, Auto)
			if aerr != nil {
				t.Fatalf("Build(auto) = %v, want no error", aerr)
			}
			if got := len(auto.Frontends) == 1; got != tt.wantKernel {
				t.Errorf("auto serves fe in the kernel: %v, want %v", got, tt.wantKernel)
			}
			if tt.wantKernel {
				return
			}
			var r *Refusal
			if !errors.As(err, &r) {
				t.Fatalf("error %T %v, want a *Refusal", err, err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, tt.wantPos) {
				t.Errorf("error %q does not start with %q", msg, tt.wantPos)
			}
			for _, s := range append(tt.wantInMsg, "needs the user-space relay", "accepted with --datapath kernel") {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q does not say %q", msg, s)
				}
			}
			if d := auto.Decisions[0]; d.Kernel || d.Why != msg {
				t.Errorf("auto's decision %+v, want the relay because %q", d, msg)
			}
		})
	}
}

func TestSlots(t *testing.T) {
	tests := []struct {
		weights []int
		want    []int
	}{
		{weights: []int{1, 1, 1}, want: []int{0, 1, 2}},
		{weights: []int{5, 1, 1}, want: []int{0, 0, 1, 0, 2, 0, 0}},
		{weights: []int{1, 2, 3}, want: []int{2, 1, 0, 2, 1, 2}},
		{weights: []int{0, 2}, want: []int{1, 1}},
		{weights: nil, want: []int{}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, Slots(tt.weights)); diff != "" {
			t.Errorf("Slots(%v) (-want +got):\n%s", tt.weights, diff)
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, s := range []string{"relay", "kernel", "auto"} {
		if m, err := ParseMode(s); err != nil || string(m) != s {
			t.Errorf("ParseMode(%q) = %q, %v", s, m, err)
		}
	}
	if _, err := ParseMode("ipvs"); err == nil || !strings.Contains(err.Error(), "accepted: relay, kernel or auto") {
		t.Errorf("ParseMode(ipvs) = %v, want the accepted values", err)
	}
}

// TestDemote: a backend handed back to the relay takes its frontends
// with it, and their decisions say why.
func TestDemote(t *testing.T) {
	p := parse(t, seedish)
	p.Demote("masters", "forwarding is off")
	var names []string
	for _, f := range p.Frontends {
		names = append(names, f.Name)
	}
	if diff := cmp.Diff([]string{"bulk"}, names); diff != "" {
		t.Errorf("frontends left (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"iperf"}, p.Backends); diff != "" {
		t.Errorf("backends left (-want +got):\n%s", diff)
	}
	want := Decision{Proxy: "frontend main", Why: "forwarding is off"}
	if diff := cmp.Diff(want, p.Decisions[0]); diff != "" {
		t.Errorf("main's decision (-want +got):\n%s", diff)
	}
}

func TestDNATTimeouts(t *testing.T) {
	host := map[string]string{
		"syn_sent": "120", "syn_recv": "60", "established": "432000", "fin_wait": "120", "close_wait": "60",
		"last_ack": "30", "time_wait": "120", "close": "10", "max_retrans": "300", "unacknowledged": "300",
	}
	read := func(name string) (string, error) {
		v, ok := host[strings.TrimPrefix(name, "nf_conntrack_tcp_timeout_")]
		if !ok {
			return "", fmt.Errorf("no %s", name)
		}
		return v + "\n", nil
	}
	got, err := DNATTimeouts(read)
	if err != nil {
		t.Fatal(err)
	}
	// The host's, time_wait at most 10 s, syn_sent2 as syn_sent.
	want := []uint32{120, 60, 432000, 120, 60, 30, 10, 10, 120, 300, 300}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DNATTimeouts (-want +got):\n%s", diff)
	}
	host["time_wait"] = "5" // a host that already has less keeps it
	if got, _ := DNATTimeouts(read); got[6] != 5 {
		t.Errorf("time_wait with the host's at 5 s: %d, want 5", got[6])
	}
	host["close"] = "ten"
	if _, err := DNATTimeouts(read); err == nil || !strings.Contains(err.Error(), `nf_conntrack_tcp_timeout_close: "ten" is not a number of seconds`) {
		t.Errorf("a bad sysctl value: %v, want an error naming it", err)
	}
}

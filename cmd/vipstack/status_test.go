package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/ipfailover"
	"github.com/vipstack/vipstack/internal/k8s/agent"
	lbstats "github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/node"
	"github.com/vipstack/vipstack/internal/serve"
)

// TestStatusOfEverySubcommand: `vipstack status` prints the status of
// whichever subcommand serves the address (each has its own shape), not an
// empty node table; -o json passes the answer through.
func TestStatusOfEverySubcommand(t *testing.T) {
	inst := engine.InstanceStatus{Name: "VI_1", State: "MASTER", VRID: 51, Interface: "eth0", VIPs: []string{"198.18.0.100/32"},
		Master: "198.18.0.11", MasterPriority: 250, BasePriority: 250, Effective: 250}
	tests := []struct {
		name   string
		status any
		want   []string
	}{
		{name: "node", status: node.Status{Node: "master-0", Role: "master", Interface: "eth0", VRRP: []engine.InstanceStatus{inst}},
			want: []string{"node master-0 (master) on eth0", "VI_1      MASTER  51"}},
		{name: "vrrp", status: map[string]any{"instances": []engine.InstanceStatus{inst}},
			want: []string{"(vipstack vrrp) on eth0", "VI_1      MASTER  51"}},
		{name: "agent", status: agent.Status{Node: "n1", Instances: []engine.InstanceStatus{inst}, Warnings: []string{"group x/y is not served"}},
			want: []string{"warning: group x/y is not served", "node n1 (vipstack agent) on eth0", "VI_1      MASTER  51"}},
		{name: "agent with BGP", status: agent.Status{Node: "n1", Instances: []engine.InstanceStatus{inst},
			BGP: &node.BGPStatus{ASN: 64513, RouterID: "198.18.0.11", Peers: []node.BGPPeerStatus{{Address: "198.18.0.1", ASN: 64512, Session: "established", Advertised: 1}},
				Routes: []node.BGPRouteStatus{{Prefix: "198.18.0.201/32", Role: "service lab/web", Reason: "no ready endpoint on this node (externalTrafficPolicy Local)"}}}},
			want: []string{"node n1 (vipstack agent) on eth0", "bgp: AS 64513, router ID 198.18.0.11", "peer 198.18.0.1 AS 64512 (eBGP): established, 1 routes sent",
				"route 198.18.0.201/32 (service lab/web): not announced: no ready endpoint on this node (externalTrafficPolicy Local)"}},
		{name: "ipfailover", status: ipfailover.Status{ConfigName: "pool", Phase: "running", Interface: "eth0", Address: "198.18.0.11", Mode: "multicast",
			Ranks: ipfailover.Ranks{Self: 1, Count: 3, Basis: "by address"}, VIPs: 30, Share: []int{10, 10, 10}, Held: 15,
			Check: "TCP connect to 198.18.0.11:80", CheckPassedAtStart: true, Warnings: []string{"198.18.0.12 holds group pool_VIP_1"},
			Groups: []ipfailover.GroupStatus{{Name: "pool_VIP_1", VRID: 11, VIPs: 5, Priority: 230, State: "FAULT", Fault: "script chk_pool failing", Effective: 230}}},
			want: []string{"ipfailover pool: running, 30 VIPs in 1 groups, multicast on eth0", "rank 1 of ranks 0..2: by address", "holding 15 VIPs", "warning: 198.18.0.12 holds group pool_VIP_1",
				"pool_VIP_1  FAULT  11", "fault: script chk_pool failing"}},
		{name: "ipfailover with BGP", status: ipfailover.Status{ConfigName: "pool", Phase: "running", Interface: "eth0", Address: "198.18.1.10", Mode: "bgp",
			VIPs: 2, Held: 0, Check: "TCP connect to 198.18.1.10:8080",
			BGP: &node.BGPStatus{ASN: 64512, RouterID: "198.18.1.10", Peers: []node.BGPPeerStatus{{Address: "198.18.1.1", ASN: 64500, Session: "established", BFD: "up"}},
				Routes: []node.BGPRouteStatus{{Prefix: "198.19.1.1/32", Role: "pool", Reason: "not eligible: chk_pool failing (connection refused)"}}}},
			want: []string{"ipfailover pool: running, 2 VIPs announced by BGP on eth0 from 198.18.1.10", "announcing 0 VIPs", "check: TCP connect to 198.18.1.10:8080",
				"peer 198.18.1.1 AS 64500 (eBGP): established, 0 routes sent, BFD up",
				"route 198.19.1.1/32 (pool): not announced: not eligible: chk_pool failing (connection refused)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := json.Marshal(tt.status)
			if err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(body) })}
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })

			var out, errb bytes.Buffer
			if code := runStatus(t.Context(), []string{"--addr", ln.Addr().String()}, &out, &errb); code != 0 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("table lacks %q:\n%s", w, out.String())
				}
			}
			out.Reset()
			if code := runStatus(t.Context(), []string{"--addr", ln.Addr().String(), "-o", "json"}, &out, &errb); code != 0 {
				t.Fatalf("-o json: exit %d: %s", code, errb.String())
			}
			var got, want any
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			json.Unmarshal(body, &want)
			if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
				t.Errorf("-o json changed the answer:\ngot  %s\nwant %s", g, w)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestStatusLastCheckIsCSVs: a node's LB table shows each server's last
// check with the stats CSV's last_chk text (lbstats.ServerStats.LastCheck,
// compared with haproxy 2.6.12's in TestCheckSSLStatsMatchHaproxy), not
// the TLS library's reason the node's JSON carries: "SSL handshake
// failure" for a failed check-ssl handshake, nothing for a timed-out one
// or a passed check. Before, it showed "L6RSP EOF".
func TestStatusLastCheckIsCSVs(t *testing.T) {
	servers := []lbstats.ServerStats{
		{Name: "closer", Addr: "198.18.0.11:6443", Status: "DOWN", Check: true, CheckStatus: "L6RSP", CheckInfo: "EOF"},
		{Name: "plain", Addr: "198.18.0.12:6443", Status: "DOWN", Check: true, CheckStatus: "L6RSP", CheckInfo: "tls: first record does not look like a TLS handshake"},
		{Name: "silent", Addr: "198.18.0.13:6443", Status: "DOWN", Check: true, CheckStatus: "L6TOUT", CheckInfo: "TLS handshake timed out"},
		{Name: "sts", Addr: "198.18.0.14:6443", Status: "DOWN", Check: true, CheckStatus: "L7STS", CheckCode: 503, CheckInfo: "Service Unavailable"},
		{Name: "ok", Addr: "198.18.0.15:6443", Status: "UP", Check: true, CheckStatus: "L7OK", CheckCode: 200, CheckInfo: "OK"},
		// A reason phrase with a terminal's escape sequences and a bell.
		{Name: "evil", Addr: "198.18.0.16:6443", Status: "DOWN", Check: true, CheckStatus: "L7STS", CheckCode: 500, CheckInfo: "Bad\x1b[2J\x07 day\u009b"},
	}
	body, err := json.Marshal(node.Status{Node: "master-0", Role: "master", Interface: "eth0",
		LB: &lbstats.Snapshot{Backends: []lbstats.BackendStats{{Name: "masters", Servers: servers}}}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := printStatus(&out, body, "", time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasSuffix(line, " ") {
			t.Errorf("a line ends with a space: %q", line)
		}
		if f := strings.Fields(line); len(f) >= 6 && f[0] == "masters" {
			got[f[1]] = strings.Join(f[5:], " ")
		}
	}
	want := map[string]string{
		"closer": "L6RSP SSL handshake failure",
		"plain":  "L6RSP SSL handshake failure",
		"silent": "L6TOUT",
		"sts":    "L7STS Service Unavailable",
		"ok":     "L7OK",
		"evil":   "L7STS Bad<1B>[2J<07> day<C2><9B>",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LAST CHECK by server (-want +got):\n%s\n%s", diff, out.String())
	}
	if strings.ContainsAny(out.String(), "\x1b\x07") || !utf8.ValidString(out.String()) {
		t.Errorf("the table passes a server's control bytes to the terminal: %q", out.String())
	}
	for _, sv := range servers {
		if sv.Name == "evil" {
			continue // escaped: compared above
		}
		if w := strings.TrimSpace(sv.CheckStatus + " " + sv.LastCheck()); got[sv.Name] != w {
			t.Errorf("%s: %q, the CSV's last_chk gives %q", sv.Name, got[sv.Name], w)
		}
	}
}

// TestStatusNotLive: a status endpoint answering 503 (its process not
// live: its BGP speaker stopped, its VRRP loop wedged) still has its status
// printed, table or JSON, and `vipstack status` then exits 1 saying why.
func TestStatusNotLive(t *testing.T) {
	stalled := "the VRRP engine's loop has answered no status request since 2026-12-03T12:00:00Z (12s): it is held up"
	for _, tc := range []struct {
		name      string
		st        any
		wantTable string
		wantJSON  string
		wantWhy   string
	}{
		{"node with its VRRP loop wedged", node.Status{Node: "m0", Role: "master", Interface: "eth0", Stalled: stalled},
			"NOT LIVE: vrrp: " + stalled, `"vrrp_stalled": "the VRRP engine's loop`, "not live: vrrp: " + stalled},
		{"vrrp with its loop wedged", vrrpStalled{Instances: []engine.InstanceStatus{}, Stalled: stalled},
			"NOT LIVE: vrrp: " + stalled, `"vrrp_stalled": "the VRRP engine's loop`, "not live: vrrp: " + stalled},
		{"agent with its GoBGP wedged", agent.Status{Node: "n1", Instances: []engine.InstanceStatus{},
			BGP: &node.BGPStatus{ASN: 64513, RouterID: "198.18.0.11", Wedged: "GoBGP's server has not answered ListPeer since 2026-12-03T12:00:00Z (12s): it is wedged"}},
			"NOT LIVE: bgp: GoBGP's server has not answered ListPeer", `"wedged": "GoBGP's server`, "not live: bgp: GoBGP's server has not answered ListPeer"},
		{"pool with its VRRP loop wedged", ipfailover.Status{ConfigName: "pool", Phase: "running", Mode: "multicast", Ranks: ipfailover.Ranks{Count: 1}, Stalled: stalled},
			"NOT LIVE: vrrp: " + stalled, `"vrrp_stalled": "the VRRP engine's loop`, "not live: vrrp: " + stalled},
	} {
		srv, err := serve.JSON("127.0.0.1:0", "/status", func() any { return tc.st })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		for format, want := range map[string]string{"table": tc.wantTable, "json": tc.wantJSON} {
			var out, errb bytes.Buffer
			code := runStatus(t.Context(), []string{"--addr", srv.Addr.String(), "-o", format}, &out, &errb)
			if code != 1 || !strings.Contains(out.String(), want) || !strings.Contains(errb.String(), "answers 503 Service Unavailable: "+tc.wantWhy) {
				t.Errorf("%s, -o %s: exit %d, stdout:\n%s\nstderr: %s\nwant exit 1, %q, and why on stderr", tc.name, format, code, out.String(), errb.String(), want)
			}
		}
	}
	st := ipfailover.Status{ConfigName: "pool", Phase: "running", Interface: "eth0", Address: "198.18.1.10", Mode: "bgp", VIPs: 2,
		BGP: &node.BGPStatus{ASN: 64512, RouterID: "198.18.1.10",
			Wedged:  "GoBGP's server has not answered AddPeer 198.18.1.1 since 2026-12-03T12:00:00Z (10s): it is wedged",
			Stopped: "bgp: peer 198.18.1.1: bgp: AddPeer 198.18.1.1: GoBGP did not answer within 10s"}}
	srv, err := serve.JSON("127.0.0.1:0", "/status", func() any { return st })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	addr := srv.Addr.String()
	for _, format := range []string{"table", "json"} {
		var out, errb bytes.Buffer
		code := runStatus(t.Context(), []string{"--addr", addr, "-o", format}, &out, &errb)
		wantOut := "NOT LIVE: bgp: the speaker stopped: bgp: peer 198.18.1.1"
		if format == "json" {
			wantOut = `"stopped": "bgp: peer 198.18.1.1`
		}
		if code != 1 || !strings.Contains(out.String(), wantOut) ||
			!strings.Contains(errb.String(), "answers 503 Service Unavailable: not live: bgp: the speaker stopped: bgp: peer 198.18.1.1: bgp: AddPeer 198.18.1.1: GoBGP did not answer within 10s") {
			t.Errorf("-o %s: exit %d, stdout:\n%s\nstderr: %s\nwant exit 1, %q, and why on stderr", format, code, out.String(), errb.String(), wantOut)
		}
	}
}

// vrrpStalled is `vipstack vrrp`'s status (vrrpd's, unexported) with its
// loop wedged.
type vrrpStalled struct {
	Instances []engine.InstanceStatus `json:"instances"`
	Stalled   string                  `json:"vrrp_stalled"`
}

func (s vrrpStalled) Unhealthy() string { return "vrrp: " + s.Stalled }

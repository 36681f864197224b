package lbcli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/lb"
	"github.com/vipstack/vipstack/internal/lbconfig"
	"github.com/vipstack/vipstack/internal/peers"
)

// peerConfig is seed 000's frontend and backend on loopback, with a stats
// socket at each peer's own path and short check intervals; m3 is dead.
const peerConfig = `global
  stats socket {{SOCK}} mode 600 level admin expose-fd listeners
defaults
  maxconn 2000
  mode    tcp
  retries 3
  timeout connect 10s
  timeout client  86400s
  timeout server  86400s
frontend  main
  bind 127.0.0.1:{{FE}}
  default_backend masters
backend masters
   option  httpchk GET /readyz HTTP/1.0
   balance roundrobin
   server m1 {{M1}} weight 1 check inter 200ms fall 2 rise 3
   server m2 {{M2}} weight 1 check inter 200ms fall 2 rise 3
   server m3 {{M3}} weight 1 check inter 200ms fall 2 rise 3
backend src
   balance source
   server s1 {{M1}} weight 3
`

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// stateFields are the `show servers state` columns compared with
// haproxy's: all but srv_time_since_last_change (10, a time) and
// srv_check_health (13, which moves with each check).
func stateFields(out string) []string {
	var rows []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 25 || strings.HasPrefix(line, "#") {
			continue
		}
		f[9], f[12] = "-", "-"
		rows = append(rows, strings.Join(f, " "))
	}
	return rows
}

// TestRuntimeAPIMatchesHaproxy runs haproxy 2.6 and vipstack lb with the
// same configuration and sends both the same runtime API commands on
// their stats sockets: the answers are the same (the state lines but for
// times and health counters), taking a server out of service or to
// weight 0 sends both balancers' clients to the others, and shutdown
// sessions server closes a client's connection on both, counted alike.
func TestRuntimeAPIMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	named := func(name string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/readyz" {
				io.WriteString(w, "ok\n")
				return
			}
			io.WriteString(w, name)
		}))
		t.Cleanup(s.Close)
		return s
	}
	m1, m2 := named("m1"), named("m2")
	dir := t.TempDir()
	m3 := "127.0.0.1:" + freePort(t)
	conf := func(sock, fe string) string {
		return strings.NewReplacer("{{SOCK}}", sock, "{{FE}}", fe, "{{M1}}", m1.Listener.Addr().String(),
			"{{M2}}", m2.Listener.Addr().String(), "{{M3}}", m3).Replace(peerConfig)
	}

	// haproxy.
	hsock, hfe := filepath.Join(dir, "haproxy.sock"), freePort(t)
	out := peers.HAProxy(t, conf(hsock, hfe))

	// vipstack: the same text through the same reader, the LB and its
	// sockets as `vipstack lb` runs them.
	vsock := filepath.Join(dir, "vipstack.sock")
	cfg, err := haproxycfg.Parse("haproxy.cfg", []byte(conf(vsock, "1")))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Frontends[0].Binds = []lbconfig.Bind{{Addr: mustAddrPort("127.0.0.1:0")}}
	l := startLB(t, lb.Options{}, cfg)
	if fi, err := os.Stat(vsock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("vipstack's socket: %v, mode %v, want 0600", err, fi.Mode().Perm())
	}

	peers := []struct {
		name, sock, fe string
	}{{"haproxy", hsock, "127.0.0.1:" + hfe}, {"vipstack", vsock, l.Addrs("main")[0].String()}}
	// Both settled: m1, m2 UP after a passed check, m3 DOWN after failed
	// ones (op state 2 2 0, check results 3 3 2).
	settled := func(sock string) bool {
		c, err := net.Dial("unix", sock)
		if err != nil {
			return false
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, "show servers state masters\n")
		b, _ := io.ReadAll(c)
		var got []string
		for _, row := range stateFields(string(b)) {
			f := strings.Fields(row)
			got = append(got, f[5]+" "+f[11])
		}
		return cmp.Equal(got, []string{"2 3", "2 3", "0 2"})
	}
	deadline := time.Now().Add(20 * time.Second)
	for !settled(hsock) || !settled(vsock) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for m1, m2 UP and m3 DOWN on both\nhaproxy:\n%s\nvipstack:\n%s\n%s",
				ask(t, hsock, "show servers state\n"), ask(t, vsock, "show servers state\n"), out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	// show stat typed: every line vipstack writes, haproxy writes too with
	// the same key (object, ids, position, name), tags and type; the
	// fields that do not move with time or traffic have the same value.
	typedLines := func(out string) map[string][2]string {
		m := map[string][2]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			// KEY:TAGS:TYPE:VALUE, the value possibly with colons.
			if f := strings.SplitN(line, ":", 4); len(f) == 4 {
				m[f[0]] = [2]string{f[1] + ":" + f[2], f[3]}
			}
		}
		return m
	}
	htyped, vtyped := typedLines(ask(t, hsock, "show stat typed\n")), typedLines(ask(t, vsock, "show stat typed\n"))
	if len(vtyped) < 50 {
		t.Fatalf("vipstack's show stat typed has %d lines", len(vtyped))
	}
	static := map[string]bool{"pxname": true, "svname": true, "status": true, "weight": true, "iid": true, "sid": true,
		"type": true, "check_status": true, "check_code": true, "mode": true, "act": true, "bck": true, "check_rise": true, "check_fall": true}
	for key, v := range vtyped {
		h, ok := htyped[key]
		switch {
		case !ok:
			t.Errorf("show stat typed: vipstack writes %s, haproxy does not", key)
		case h[0] != v[0]:
			t.Errorf("show stat typed %s: tags and type %s, haproxy's %s", key, v[0], h[0])
		case static[strings.Split(key, ".")[4]] && h[1] != v[1]:
			t.Errorf("show stat typed %s: value %q, haproxy's %q", key, v[1], h[1])
		}
	}

	// A new connection per request: the balancers pick a server per
	// connection.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	served := func(fe string) map[string]bool {
		seen := map[string]bool{}
		for range 6 {
			resp, err := client.Get("http://" + fe + "/")
			if err != nil {
				t.Fatalf("through %s: %v", fe, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			seen[string(b)] = true
		}
		return seen
	}
	// The weight and act columns of show stat for backends masters and
	// src, and the backends' status (a server's status may read "UP 1/2"
	// on haproxy for a while after enable server, where vipstack's reads
	// UP: not compared here).
	weights := func(sock string) string {
		var rows []string
		for _, line := range strings.Split(ask(t, sock, "show stat\n"), "\n") {
			f := strings.Split(line, ",")
			if len(f) > 19 && (f[0] == "masters" || f[0] == "src") {
				if f[1] != "BACKEND" {
					f[17] = "-"
				}
				rows = append(rows, strings.Join([]string{f[0], f[1], f[17], f[18], f[19]}, ","))
			}
		}
		return strings.Join(rows, "\n")
	}
	steps := []struct {
		cmd    string
		served map[string]bool // nil: not checked
		stat   bool            // compare show stat's weights afterwards
	}{
		{cmd: "show backend"},
		{cmd: "get weight masters/m1"},
		{cmd: "get weight masters"},
		{cmd: "get weight nope/m1"},
		{cmd: "show servers state nope"},
		{cmd: "set server masters/zz state maint"},
		{cmd: "set server masters/m1 state off"},
		{cmd: "set server masters state maint"},
		{cmd: "user; set server masters/m1 state maint"},
		{cmd: "operator; disable server masters/m1; show cli level"},
		{cmd: "set server masters/m1 state drain", served: map[string]bool{"m2": true}},
		{cmd: "show servers state masters"},
		{cmd: "set server masters/m1 state maint", served: map[string]bool{"m2": true}},
		{cmd: "show servers state"},
		{cmd: "set server masters/m1 state ready", served: map[string]bool{"m1": true, "m2": true}},
		{cmd: "disable server masters/m2", served: map[string]bool{"m1": true}},
		{cmd: "show servers state"},
		{cmd: "enable server masters/m2", served: map[string]bool{"m1": true, "m2": true}},
		{cmd: "show servers state"},
		{cmd: "set weight masters/m1 0", served: map[string]bool{"m2": true}, stat: true},
		{cmd: "get weight masters/m1"},
		{cmd: "show servers state masters"},
		{cmd: "set weight masters/m2 0%", stat: true},
		{cmd: "set server masters/m2 weight 100%", served: map[string]bool{"m2": true}},
		{cmd: "set server masters/m1 weight 3", served: map[string]bool{"m1": true, "m2": true}, stat: true},
		{cmd: "get weight masters/m1"},
		{cmd: "set weight masters/m1 50%"},
		{cmd: "get weight masters/m1"},
		{cmd: "set weight masters/m1 1000%"},
		{cmd: "get weight masters/m1"},
		{cmd: "set weight masters/m1 257"},
		{cmd: "set weight masters/m1 -2%"},
		{cmd: "set weight masters/m1 abc"},
		{cmd: "set weight masters/m1 2x"},
		{cmd: "set weight masters/m1"},
		{cmd: "set weight masters/zz 1"},
		{cmd: "set weight nope/m1 1"},
		{cmd: "set server masters/m1 weight"},
		{cmd: "user; set weight masters/m1 1"},
		{cmd: "set weight src/s1 2"},
		{cmd: "set weight src/s1 50%"},
		{cmd: "set weight src/s1 0", stat: true},
		{cmd: "set weight src/s1 3"},
		{cmd: "get weight src/s1"},
		{cmd: "set weight masters/m1 1", served: map[string]bool{"m1": true, "m2": true}},
		{cmd: "show servers state"},
		{cmd: "shutdown sessions server masters"},
		{cmd: "shutdown sessions server masters/zz"},
		{cmd: "shutdown sessions server nope/m1"},
		{cmd: "operator; shutdown sessions server masters/m1"},
		{cmd: "show sess 0x1234"},
		{cmd: "show sess 12"},
		{cmd: "show sess 0x1234 all"},
		{cmd: "user; show sess"},
		{cmd: "user; show sess all"},
		{cmd: "user; show sess 0x1234"},
		{cmd: "shutdown session"},
		{cmd: "shutdown session xyz"},
		{cmd: "shutdown session all"},
		{cmd: "shutdown session 0x1234"},
		{cmd: "shutdown session -1"},
		{cmd: "operator; shutdown session 0x1234"},
		{cmd: "user; shutdown session"},
	}
	for _, s := range steps {
		state := strings.HasPrefix(s.cmd, "show servers state") && !strings.HasSuffix(s.cmd, "nope")
		var answers []string
		// A state line read while haproxy runs a check says so (check
		// result 0, check state 7), and vipstack's never do: such
		// answers are read again, a few times, until the check is over.
		for try := 0; ; try++ {
			answers = answers[:0]
			for _, p := range peers {
				got := ask(t, p.sock, s.cmd+"\n")
				if state {
					got = strings.Join(stateFields(got), "\n")
				}
				answers = append(answers, got)
			}
			if !state || answers[0] == answers[1] || try == 20 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if diff := cmp.Diff(answers[0], answers[1]); diff != "" {
			t.Errorf("%q: the answers differ (-haproxy +vipstack):\n%s", s.cmd, diff)
		}
		if s.stat {
			if diff := cmp.Diff(weights(hsock), weights(vsock)); diff != "" {
				t.Errorf("after %q: show stat's weight, act, status differ (-haproxy +vipstack):\n%s", s.cmd, diff)
			}
		}
		if s.served != nil {
			for _, p := range peers {
				if seen := served(p.fe); !cmp.Equal(seen, s.served) {
					t.Errorf("%s after %q: clients reached %v, want %v", p.name, s.cmd, seen, s.served)
				}
			}
		}
	}
	shutdownSessions(t, peers)
	shutdownSession(t, peers)
	showSessMatches(t, peers)
	showInfoMatches(t, hsock, vsock)
}

// sessTokens are the key=value words of show sess's lines, ports masked
// where they differ between the peers (clients', listeners', the
// balancers' own); a block's header words are keyed "head", the others
// by their line's first key. The session's id (its first word) is cut.
var sessAge = regexp.MustCompile(`^\d+[dhms](\d+[hms]){0,3}$`)

func sessTokens(lines []string) []string {
	var out []string
	for i, line := range lines {
		if i == 0 {
			_, line, _ = strings.Cut(line, ": ")
		}
		words := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == ',' || r == '(' || r == ')' })
		var kvs [][2]string
		for _, w := range words {
			if k, v, ok := strings.Cut(w, "="); ok {
				kvs = append(kvs, [2]string{k, v})
			}
		}
		if len(kvs) == 0 {
			continue
		}
		key := kvs[0][0]
		if i == 0 {
			key = "head"
		}
		for _, kv := range kvs {
			k, v := kv[0], kv[1]
			// Ages are whole seconds of each peer's own clock, read
			// at different moments: their form is compared, not the
			// number.
			if k == "age" && sessAge.MatchString(v) {
				v = "*"
			}
			if k == "src" || k == "source" || k == "addr" && key != "server" {
				if j := strings.LastIndexByte(v, ':'); j >= 0 {
					v = v[:j] + ":*"
				}
			}
			out = append(out, key+"."+k+"="+v)
		}
	}
	return out
}

// showSessMatches holds two relayed connections through each peer and
// compares show sess: every word vipstack writes of a session (ports
// masked), haproxy writes of one of its sessions too; so for the CLI
// connection asking (the one CLI connection of each, at that moment).
func showSessMatches(t *testing.T, peers []struct{ name, sock, fe string }) {
	t.Helper()
	for _, p := range peers {
		for range 2 {
			if _, err := requestThrough(t, p.fe); err != nil {
				t.Fatalf("%s: a request through it: %v", p.name, err)
			}
		}
	}
	// The sessions of each peer, as token lists: the list's lines, and
	// the blocks of show sess all.
	sessions := func(sock string) (list, blocks, cli [][]string, ids []string) {
		for _, line := range strings.Split(strings.TrimSpace(ask(t, sock, "show sess\n")), "\n") {
			if strings.Contains(line, "proto=unix_stream") {
				cli = append(cli, sessTokens([]string{line}))
				continue
			}
			list = append(list, sessTokens([]string{line}))
			ids = append(ids, strings.SplitN(line, ":", 2)[0])
		}
		var cur []string
		for _, line := range strings.Split(ask(t, sock, "show sess all\n"), "\n") {
			if strings.HasPrefix(line, "0x") || line == "" {
				if len(cur) > 0 && !strings.Contains(cur[0], "proto=unix_stream") {
					blocks = append(blocks, sessTokens(cur))
				} else if len(cur) > 0 {
					cli = append(cli, sessTokens(cur))
				}
				cur = nil
			}
			if line != "" {
				cur = append(cur, line)
			}
		}
		return list, blocks, cli, ids
	}
	hlist, hblocks, hcli, _ := sessions(peers[0].sock)
	vlist, vblocks, vcli, vids := sessions(peers[1].sock)
	// vipstack's own last line, "state=EST age=..", says what haproxy's
	// scb line (the server side) says with state=; its age (none here:
	// these frontends keep no log) is not compared.
	for j, b := range vcli[1:] {
		vcli[1+j] = slices.DeleteFunc(b, func(w string) bool { return strings.HasPrefix(w, "state.age=") })
	}
	for j, b := range vblocks {
		vblocks[j] = slices.DeleteFunc(b, func(w string) bool { return strings.HasPrefix(w, "state.age=") })
		for i, w := range vblocks[j] {
			vblocks[j][i] = strings.Replace(w, "state.state=", "scb.state=", 1)
		}
	}
	// contained: every vipstack session's words are in a haproxy
	// session of its own.
	contained := func(what string, h, v [][]string) {
		if len(h) != 2 || len(v) != 2 {
			t.Errorf("%s: haproxy lists %d sessions, vipstack %d; want 2 each", what, len(h), len(v))
			return
		}
		used := make([]bool, len(h))
	next:
		for _, vs := range v {
			for i, hs := range h {
				if used[i] {
					continue
				}
				all := true
				for _, w := range vs {
					all = all && slices.Contains(hs, w)
				}
				if all {
					used[i] = true
					continue next
				}
			}
			t.Errorf("%s: vipstack's session %v is none of haproxy's:\n%v", what, vs, h)
		}
	}
	contained("show sess", hlist, vlist)
	contained("show sess all", hblocks, vblocks)
	// The CLI connection asking: its line, then its block.
	if len(hcli) != 2 || len(vcli) != 2 {
		t.Errorf("CLI connections in show sess and show sess all: haproxy %d, vipstack %d; want 1 and 1 each", len(hcli), len(vcli))
	} else {
		for i, what := range []string{"show sess", "show sess all"} {
			for _, w := range vcli[i] {
				if !slices.Contains(hcli[i], strings.Replace(w, "state.state=", "scb.state=", 1)) {
					t.Errorf("%s: vipstack's CLI connection has %s, haproxy's does not: %v", what, w, hcli[i])
				}
			}
		}
		for _, want := range []string{"head.proto=unix_stream", "head.fe=GLOBAL", "head.be=<NONE>", "head.srv=<none>"} {
			if !slices.Contains(vcli[0], want) {
				t.Errorf("vipstack's CLI line %v lacks %s", vcli[0], want)
			}
		}
	}
	for _, want := range []string{"head.proto=tcpv4", "head.src=127.0.0.1:*", "head.fe=main", "head.be=masters"} {
		if len(vlist) > 0 && !slices.Contains(vlist[0], want) {
			t.Errorf("vipstack's show sess line %v lacks %s", vlist[0], want)
		}
	}
	if len(vids) > 0 {
		one := ask(t, peers[1].sock, "show sess "+vids[0]+"\n")
		if !strings.HasPrefix(one, vids[0]+": ") || strings.Count(one, "\n0x") != 0 {
			t.Errorf("vipstack's show sess %s: %q, want that session's block alone", vids[0], one)
		}
	}
}

// showInfoMatches compares show info: every field vipstack writes,
// haproxy writes too, in the same order, at the same position with the
// same tags and type (typed), in the same JSON shape; the fields that
// hold for any process of this configuration have the same value.
func showInfoMatches(t *testing.T, hsock, vsock string) {
	t.Helper()
	typed := func(sock string) (order []string, m map[string][2]string) {
		m = map[string][2]string{}
		for _, line := range strings.Split(strings.TrimSpace(ask(t, sock, "show info typed\n")), "\n") {
			f := strings.SplitN(line, ":", 4)
			if len(f) != 4 {
				t.Fatalf("show info typed line %q", line)
			}
			order = append(order, f[0])
			m[f[0]] = [2]string{f[1] + ":" + f[2], f[3]}
		}
		return order, m
	}
	horder, h := typed(hsock)
	vorder, v := typed(vsock)
	// Fields whose value is the same for both: fixed, or zero by what
	// vipstack is and by this configuration on haproxy.
	same := map[string]bool{"Nbproc": true, "Process_num": true, "Memmax_MB": true, "Memmax_bytes": true, "node": true,
		"MaxSslConns": true, "CurrSslConns": true, "CumSslConns": true, "ConnRateLimit": true, "SessRateLimit": true,
		"SslRate": true, "SslRateLimit": true, "MaxSslRate": true, "SslFrontendKeyRate": true, "SslFrontendMaxKeyRate": true,
		"SslFrontendSessionReuse_pct": true, "SslBackendKeyRate": true, "SslBackendMaxKeyRate": true, "SslCacheLookups": true,
		"SslCacheMisses": true, "CompressBpsIn": true, "CompressBpsOut": true, "CompressBpsRateLim": true, "ActivePeers": true,
		"ConnectedPeers": true, "FailedResolutions": true, "DebugCommandsIssued": true, "CumRecvLogs": true}
	i := 0
	for _, key := range vorder {
		for i < len(horder) && horder[i] != key {
			i++
		}
		if i == len(horder) {
			t.Errorf("show info typed: vipstack's %s is not in haproxy's, or not in its order", key)
			i = 0
			continue
		}
		name := strings.Split(key, ".")[1]
		if h[key][0] != v[key][0] {
			t.Errorf("show info typed %s: tags and type %s, haproxy's %s", key, v[key][0], h[key][0])
		}
		if same[name] && h[key][1] != v[key][1] {
			t.Errorf("show info %s: %q, haproxy's %q", name, v[key][1], h[key][1])
		}
	}
	// The plain lines are "Name: value" in the same order.
	for _, sock := range []string{hsock, vsock} {
		lines := strings.Split(strings.TrimSpace(ask(t, sock, "show info\n")), "\n")
		order, _ := typed(sock)
		for j, line := range lines {
			if k, _, ok := strings.Cut(line, ": "); !ok || j >= len(order) || strings.Split(order[j], ".")[1] != k {
				t.Errorf("%s: show info line %d %q does not match its typed field", sock, j, line)
			}
		}
	}
	// JSON: the same objects but for their values.
	shape := func(sock string) map[string]string {
		var fields []map[string]any
		if err := json.Unmarshal([]byte(ask(t, sock, "show info json\n")), &fields); err != nil {
			t.Fatalf("show info json: %v", err)
		}
		m := map[string]string{}
		for _, f := range fields {
			val := f["value"].(map[string]any)
			f["value"] = val["type"]
			b, _ := json.Marshal(f)
			m[fmt.Sprint(f["field"])] = string(b)
		}
		return m
	}
	hj, vj := shape(hsock), shape(vsock)
	for k, vv := range vj {
		if hj[k] != vv {
			t.Errorf("show info json field %s: %s, haproxy's %s", k, vv, hj[k])
		}
	}
}

// shutdownSessions holds a keep-alive HTTP connection to m1 through each
// peer (m2 at weight 0 meanwhile), runs shutdown sessions server
// masters/m1 on both, and checks that both close it and count it alike:
// m1's scur drops to 0, and its stot, econ, eresp, cli_abrt and srv_abrt
// do not move (vipstack leaves the last three empty: it does not count
// them).
func shutdownSessions(t *testing.T, peers []struct{ name, sock, fe string }) {
	t.Helper()
	var conns []net.Conn
	for _, p := range peers {
		ask(t, p.sock, "set weight masters/m2 0\n")
		c, err := requestThrough(t, p.fe)
		if err != nil || !strings.HasSuffix(c.answer, "m1") {
			t.Fatalf("%s: a request through it got %q, %v; want m1's answer", p.name, c.answer, err)
		}
		conns = append(conns, c)
		ask(t, p.sock, "set weight masters/m2 1\n")
	}
	m1 := func(sock string) (scur, others string) {
		for _, line := range strings.Split(ask(t, sock, "show stat\n"), "\n") {
			if f := strings.Split(line, ","); len(f) > 50 && f[0] == "masters" && f[1] == "m1" {
				return f[4], "stot " + f[7] + " econ " + f[13] + " eresp " + f[14] + " cli_abrt " + f[49] + " srv_abrt " + f[50]
			}
		}
		return "", "no m1 line"
	}
	var before []string
	for _, p := range peers {
		scur, others := m1(p.sock)
		if scur != "1" {
			t.Errorf("%s: m1's scur %q with a client on it, want 1", p.name, scur)
		}
		before = append(before, others)
	}
	for i, p := range peers {
		if got := ask(t, p.sock, "shutdown sessions server masters/m1\n"); got != "\n" {
			t.Errorf("%s: shutdown sessions answered %q", p.name, got)
		}
		if _, err := conns[i].Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("%s: after shutdown sessions, the client read %v, want the end of the connection", p.name, err)
		}
	}
	for i, p := range peers {
		// haproxy releases the stream at its next pass: read until it did.
		var scur, others string
		for try := 0; try < 50; try++ {
			if scur, others = m1(p.sock); scur == "0" {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if scur != "0" || others != before[i] {
			t.Errorf("%s: m1 after shutdown sessions: scur %s, %s; want scur 0, and as before: %s", p.name, scur, others, before[i])
		}
	}
}

// shutdownSession holds a keep-alive HTTP connection through each peer,
// finds it in show sess by its client address, and closes it with
// shutdown session <id>: both answer "", their client reads the end of
// the connection, and both count it alike: its server's scur drops to 0,
// its stot, econ, eresp, cli_abrt and srv_abrt do not move (measured on
// haproxy 2.6.12: a killed connection is counted as one that ended).
func shutdownSession(t *testing.T, peers []struct{ name, sock, fe string }) {
	t.Helper()
	counters := func(sock, srv string) (scur, others string) {
		for _, line := range strings.Split(ask(t, sock, "show stat\n"), "\n") {
			if f := strings.Split(line, ","); len(f) > 50 && f[0] == "masters" && f[1] == srv {
				return f[4], "stot " + f[7] + " econ " + f[13] + " eresp " + f[14] + " cli_abrt " + f[49] + " srv_abrt " + f[50]
			}
		}
		return "", "no " + srv + " line"
	}
	for _, p := range peers {
		c, err := requestThrough(t, p.fe)
		if err != nil {
			t.Fatalf("%s: a request through it: %v", p.name, err)
		}
		var id, srv string
		for _, line := range strings.Split(ask(t, p.sock, "show sess\n"), "\n") {
			if strings.Contains(line, " src="+c.LocalAddr().String()+" ") {
				id = strings.SplitN(line, ":", 2)[0]
				if _, rest, ok := strings.Cut(line, " srv="); ok {
					srv = strings.Fields(rest)[0]
				}
			}
		}
		if id == "" || srv == "" {
			t.Fatalf("%s: the connection from %s is not in show sess", p.name, c.LocalAddr())
		}
		scur, before := counters(p.sock, srv)
		if scur != "1" {
			t.Errorf("%s: %s's scur %q with a client on it, want 1", p.name, srv, scur)
		}
		if got := ask(t, p.sock, "shutdown session "+id+"\n"); got != "\n" {
			t.Errorf("%s: shutdown session %s answered %q", p.name, id, got)
		}
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("%s: after shutdown session, the client read %v, want the end of the connection", p.name, err)
		}
		// haproxy releases the stream at its next pass: read until it did.
		var others string
		for try := 0; try < 50; try++ {
			if scur, others = counters(p.sock, srv); scur == "0" {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if scur != "0" || others != before {
			t.Errorf("%s: %s after shutdown session: scur %s, %s; want scur 0, and as before: %s", p.name, srv, scur, others, before)
		}
		// The id is not asked again: haproxy gives the freed stream's
		// memory to the next one, here the CLI connection asking, which
		// then closes itself (measured: "" again).
	}
}

// startLB runs a balancer with cfg and its stats sockets, as `vipstack
// lb` does (sockets prepared, configuration applied, sockets committed),
// logging nowhere; both stop when t ends.
func startLB(t *testing.T, opts lb.Options, cfg *lbconfig.Config) *lb.LB {
	t.Helper()
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := lb.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Shutdown(canceledCtx()) })
	socks := NewSockets(l, "test", time.Now(), opts.Logger)
	t.Cleanup(socks.Close)
	change, err := socks.Prepare(cfg.StatsSockets)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	change.Commit()
	return l
}

func mustAddrPort(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func canceledCtx() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// relayed is a connection through a balancer and the first answer read
// from it.
type relayed struct {
	net.Conn
	answer string
}

// requestThrough sends one HTTP request through the frontend at fe and
// reads its answer, keeping the connection open until the test ends.
func requestThrough(t *testing.T, fe string) (relayed, error) {
	t.Helper()
	c, err := net.Dial("tcp", fe)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	return relayed{Conn: c, answer: string(buf[:n])}, err
}

package lbconfig

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// example is the YAML form documented in yaml.go.
const example = `maxConn: 20000
retries: 3
timeouts: {connect: 10s, client: 24h, server: 24h, tunnel: 24h, queue: 1m, httpRequest: 30s}
frontends:
  - name: main
    binds: [{addr: "[::]:9445", v4v6: true}]
    backend: masters
backends:
  - name: masters
    balance: roundrobin
    httpCheck: {method: GET, uri: /readyz, version: HTTP/1.0}
    logHealthChecks: true
    dontLogNull: true
    servers:
      - {name: m0, addr: "10.0.3.211:6443", check: true, checkSSL: true, verify: false, inter: 1s, fall: 2, rise: 3}
monitors:
  - {name: health_check_http_url, binds: [{addr: "[::]:50936", v4v6: true}], uri: /haproxy_ready}
stats:
  - name: stats
    binds: [{addr: "localhost:50000"}]
    uri: /haproxy_stats
    refresh: 30s
    hideVersion: true
    users: [{user: Username, pass: Password}]
`

// TestYAMLDocExample checks that the example in ParseYAML's comment is
// the one TestParseYAMLExample parses.
func TestYAMLDocExample(t *testing.T) {
	src, err := os.ReadFile("yaml.go")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	in := false
	for _, l := range strings.Split(string(src), "\n") {
		switch {
		case strings.HasPrefix(l, "//\t"):
			in = true
			b.WriteString(strings.TrimPrefix(l, "//\t") + "\n")
		case in:
			if diff := cmp.Diff(example, b.String()); diff != "" {
				t.Errorf("ParseYAML's doc example differs from the tested one (-tested +doc):\n%s", diff)
			}
			return
		}
	}
	t.Fatal("no example found in yaml.go")
}

var cmpAddr = cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })

func TestParseYAMLExample(t *testing.T) {
	got, err := ParseYAML("lb.yaml", []byte(example))
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		MaxConn: 20000,
		Retries: 3,
		Timeouts: Timeouts{Connect: 10 * time.Second, Client: 24 * time.Hour, Server: 24 * time.Hour,
			Tunnel: 24 * time.Hour, Queue: time.Minute, HTTPRequest: 30 * time.Second},
		Frontends: []Frontend{{Name: "main", Binds: []Bind{{Addr: ap("[::]:9445"), V4V6: true}}, Backend: "masters"}},
		Backends: []Backend{{Name: "masters", Balance: RoundRobin, Check: HTTPCheck{Method: "GET", URI: "/readyz", Version: "HTTP/1.0"},
			LogHealthChecks: true, DontLogNull: true, Servers: []Server{{Name: "m0", Addr: ap("10.0.3.211:6443"), Weight: 1,
				Check: true, CheckSSL: true, Inter: time.Second, Fall: 2, Rise: 3}}}},
		Monitors: []Monitor{{Name: "health_check_http_url", Binds: []Bind{{Addr: ap("[::]:50936"), V4V6: true}}, URI: "/haproxy_ready"}},
		Stats: []Stats{{Name: "stats", Binds: []Bind{{Addr: ap("127.0.0.1:50000"), Host: "localhost"}}, URI: "/haproxy_stats",
			Refresh: 30 * time.Second, HideVersion: true, Users: []UserPass{{User: "Username", Pass: "Password"}}}},
	}
	if diff := cmp.Diff(want, got, cmpAddr, cmpopts.IgnoreFields(Config{}, "Source")); diff != "" {
		t.Errorf("ParseYAML mismatch (-want +got):\n%s", diff)
	}
	for key, pos := range map[string]string{
		"frontend main":                 "lb.yaml:5",
		"frontend main/bind 0":          "lb.yaml:6",
		"backend masters/server m0":     "lb.yaml:15",
		"listen stats/stats auth 0":     "lb.yaml:24",
		"defaults/timeout http-request": "lb.yaml:3",
	} {
		if got.Source[key] != pos {
			t.Errorf("Source[%q] = %q, want %q", key, got.Source[key], pos)
		}
	}
}

// TestYAMLRoundTrip writes validated configs in the YAML form and reads
// them back.
func TestYAMLRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		cfg  func() *Config
	}{
		{name: "valid", cfg: valid},
		{name: "every field", cfg: func() *Config {
			c := valid()
			c.MaxConn, c.GlobalMaxConn, c.Retries = 100, 200, 7
			c.BufSize, c.MaxRewrite = 32768, new(0)
			c.ProxyIDs = map[string]int{BackendKey(c.Backends[0].Name): 7}
			c.Timeouts = Timeouts{Connect: time.Millisecond, Client: 90 * time.Second, Server: 25 * time.Hour, Tunnel: 1500 * time.Microsecond,
				Queue: time.Minute, HTTPRequest: time.Hour + time.Second, HTTPKeepAlive: 10 * time.Second}
			c.Frontends[0].Binds = append(c.Frontends[0].Binds, Bind{Addr: ap("[::1]:1")}, Bind{Addr: ap("127.0.0.1:2"), Host: "localhost"})
			b := &c.Backends[0]
			b.Balance, b.LogHealthChecks, b.DontLogNull, b.RedispatchOnRetry = LeastConn, true, true, true
			b.Servers[0].Verify = true
			c.Stats[0].Refresh, c.Stats[0].HideVersion = 5*time.Second, true
			c.Stats[0].Users = []UserPass{{User: "a b", Pass: `p: "q"`}}
			c.Stats[0].Prometheus = &PrometheusService{Paths: []string{"/metrics", "/m"}, Unless: true}
			return c
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.cfg()
			if err := Validate(want); err != nil {
				t.Fatal(err)
			}
			y, err := FormatYAML(want)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseYAML("lb.yaml", y)
			if err != nil {
				t.Fatalf("ParseYAML: %v\n%s", err, y)
			}
			if diff := cmp.Diff(want, got, cmpAddr, cmpopts.IgnoreFields(Config{}, "Source", "Warnings")); diff != "" {
				t.Errorf("round trip mismatch (-want +got):\n%s\n%s", diff, y)
			}
		})
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		24 * time.Hour: "24h", time.Minute: "1m", 90 * time.Minute: "1h30m", time.Second: "1s",
		1500 * time.Millisecond: "1.5s", time.Hour + time.Second: "1h0m1s", time.Millisecond: "1ms",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestParseYAMLErrors(t *testing.T) {
	// A valid document whose lines the cases replace.
	const doc = "frontends:\n" + // 1
		"  - name: main\n" + // 2
		"    binds: [{addr: \"127.0.0.1:47011\"}]\n" + // 3
		"    backend: masters\n" + // 4
		"backends:\n" + // 5
		"  - name: masters\n" + // 6
		"    servers:\n" + // 7
		"      - {name: m0, addr: \"127.0.0.1:47012\"}\n" // 8
	if _, err := ParseYAML("lb.yaml", []byte(doc)); err != nil {
		t.Fatalf("the base document is rejected: %v", err)
	}
	sub := func(old, new string) string {
		if strings.Count(doc, old) != 1 {
			t.Fatalf("%q occurs %d times", old, strings.Count(doc, old))
		}
		return strings.Replace(doc, old, new, 1)
	}
	tests := []struct {
		name, yaml, want string
	}{
		{
			name: "unknown field",
			yaml: sub("addr: \"127.0.0.1:47012\"", "addr: \"127.0.0.1:47012\", wieght: 2"),
			want: "lb.yaml:8: field wieght is not a field of a server (accepted: name, addr, weight, check, checkSSL, verify, inter, fall, rise)",
		},
		{
			name: "every unknown field, each with its line",
			yaml: sub("addr: \"127.0.0.1:47012\"", "addr: \"127.0.0.1:47012\", wieght: 2, chek: true"),
			want: "lb.yaml:8: field wieght is not a field of a server (accepted: name, addr, weight, check, checkSSL, verify, inter, fall, rise)\n" +
				"lb.yaml:8: field chek is not a field of a server (accepted: name, addr, weight, check, checkSSL, verify, inter, fall, rise)",
		},
		{
			name: "unknown top-level field",
			yaml: "maxconn: 10\n" + doc,
			want: "lb.yaml:1: field maxconn is not a field of the top level (accepted: maxConn, globalMaxConn, retries, timeouts, frontends, backends, monitors, stats, statsSockets, logTag, bufSize, maxRewrite, proxyIDs)",
		},
		{
			name: "repeated key",
			yaml: "retries: 2\nretries: 3\n" + doc,
			want: "lb.yaml:2: mapping key \"retries\" already defined at line 1",
		},
		{
			name: "bad duration",
			yaml: "timeouts: {connect: 10}\n" + doc,
			want: `lb.yaml:1: timeouts.connect: "10" is not a duration (accepted: a number with a unit, such as 1s, 500ms or 1m30s)`,
		},
		{
			name: "duration not a scalar",
			yaml: "timeouts: {connect: [1s]}\n" + doc,
			want: "lb.yaml:1: a duration must be a string such as 1s or 500ms",
		},
		{
			name: "wrong type",
			yaml: "maxConn: lots\n" + doc,
			want: `lb.yaml:1: maxConn: "lots" is not an integer`,
		},
		{
			// A server on one line: the path says which value is bad.
			name: "bad duration in a server",
			yaml: sub("addr: \"127.0.0.1:47012\"", "addr: \"127.0.0.1:47012\", check: true, inter: 1sec"),
			want: `lb.yaml:8: backends[0].servers[0].inter: "1sec" is not a duration (accepted: a number with a unit, such as 1s, 500ms or 1m30s)`,
		},
		{
			name: "wrong type in a server",
			yaml: sub("addr: \"127.0.0.1:47012\"", "addr: \"127.0.0.1:47012\", fall: two"),
			want: `lb.yaml:8: backends[0].servers[0].fall: "two" is not an integer`,
		},
		{
			// Two values "2" on the line (the quoted one is a string):
			// which one is meant is not known, so no path for it.
			name: "wrong type, ambiguous value",
			yaml: sub("addr: \"127.0.0.1:47012\"", "addr: \"127.0.0.1:47012\", rise: \"2\", fall: 2x, weight: 2"),
			want: `lb.yaml:8: "2" is not an integer` + "\n" + `lb.yaml:8: backends[0].servers[0].fall: "2x" is not an integer`,
		},
		{
			name: "empty",
			yaml: "# nothing\n",
			want: "lb.yaml: empty document (accepted: a mapping with frontends, backends, ...)",
		},
		{
			name: "two documents",
			yaml: doc + "---\n" + doc,
			want: "lb.yaml: more than one YAML document (accepted: one)",
		},
		{
			name: "bad bind address",
			yaml: sub("127.0.0.1:47011", ":47011"),
			want: `lb.yaml:3: frontend main, binds[0]: addr ":47011" is not IP:PORT, [IPv6]:PORT or localhost:PORT`,
		},
		{
			name: "bad server address",
			yaml: sub("127.0.0.1:47012", "master-0:6443"),
			want: `lb.yaml:8: backend masters, server m0: addr "master-0:6443" is not IP:PORT or [IPv6]:PORT`,
		},
		{
			name: "weight 0",
			yaml: sub("addr: \"127.0.0.1:47012\"", "addr: \"127.0.0.1:47012\", weight: 0"),
			want: "lb.yaml:8: backend masters, server m0: weight 0 is not supported by vipstack (accepted: 1..256, default 1)",
		},
		{
			name: "retries 0",
			yaml: "retries: 0\n" + doc,
			want: "lb.yaml:1: defaults: retries 0 is not supported by vipstack (accepted: 1 or more, default 3)",
		},
		{
			name: "httpCheck without method",
			yaml: sub("    servers:\n", "    httpCheck: {uri: /readyz}\n    servers:\n"),
			want: "lb.yaml:7: backend masters: httpCheck has no method (accepted: a method such as GET; leave httpCheck out for TCP connect checks)",
		},
		{
			name: "validation error at its line",
			yaml: sub("backend: masters", "backend: workers"),
			want: `lb.yaml:4: frontend main: default_backend "workers" is not a backend (accepted: masters)`,
		},
		{
			name: "validation error without a line",
			yaml: "retries: -1\n" + doc,
			want: "lb.yaml:1: defaults: retries -1 is negative (accepted: 1 or more, or 0 for the default 3)",
		},
		{
			name: "validation error naming the file",
			yaml: "globalMaxConn: -1\n" + doc,
			want: "lb.yaml:1: global: maxconn -1 is negative (accepted: 1 or more, or 0 for not set)",
		},
		{
			name: "no listener",
			yaml: "backends: []\n",
			want: "lb.yaml: no frontend, monitor or stats section: nothing to listen on (accepted: at least one frontend, or a stats socket in global)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseYAML("lb.yaml", []byte(tt.yaml))
			if cfg != nil || err == nil {
				t.Fatalf("ParseYAML accepted:\n%s", tt.yaml)
			}
			if err.Error() != tt.want {
				t.Errorf("ParseYAML error:\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}

func TestLoadYAML(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lb.yaml")
	if err := os.WriteFile(path, []byte(example), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadYAML(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Source["frontend main"]; got != path+":5" {
		t.Errorf("Source[frontend main] = %q, want %s:5", got, path)
	}
	if _, err := LoadYAML(filepath.Join(dir, "nope.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadYAML(missing) = %v, want a not-exist error", err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, MaxYAMLSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadYAML(big); err == nil || err.Error() != big+": file is larger than 1048576 bytes (1 MiB)" {
		t.Errorf("LoadYAML(big) = %v", err)
	}
}

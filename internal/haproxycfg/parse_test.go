package haproxycfg

import (
	"encoding/json"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the parser's output")

// cmpOpts compares netip values by value.
var cmpOpts = cmp.Options{
	cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b }),
}

// testdataConfigs must be accepted by vipstack and by haproxy -c.
var testdataConfigs = []string{
	"testdata/seed000.cfg",
	"testdata/seed001.cfg",
	"testdata/features.cfg",
	"testdata/openshift-current.cfg",
}

func TestParseTestdata(t *testing.T) {
	for _, name := range testdataConfigs {
		t.Run(strings.TrimPrefix(name, "testdata/"), func(t *testing.T) {
			got, err := Load(name)
			if err != nil {
				t.Fatalf("Load(%s): %v", name, err)
			}
			golden := filepath.Join("testdata", strings.ReplaceAll(t.Name(), "/", "_")+".golden")
			if *update {
				b, err := json.MarshalIndent(got, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, append(b, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			b, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			var want lbconfig.Config
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&want, got, cmpOpts); diff != "" {
				t.Errorf("Load(%s) mismatch (-want +got):\n%s", name, diff)
			}
		})
	}
}

// TestParseSeed000 spells out the model of seed 000's haproxy.cfg by hand,
// so the golden files are anchored to something written independently.
func TestParseSeed000(t *testing.T) {
	got, err := Load("testdata/seed000.cfg")
	if err != nil {
		t.Fatal(err)
	}
	server := func(name, addr string) lbconfig.Server {
		return lbconfig.Server{Name: name, Addr: netip.MustParseAddrPort(addr), Weight: 1, Check: true, CheckSSL: true,
			Verify: false, Inter: time.Second, Fall: 2, Rise: 3}
	}
	want := &lbconfig.Config{
		MaxConn: 20000,
		Retries: 3,
		Timeouts: lbconfig.Timeouts{
			HTTPRequest: 30 * time.Second, Queue: time.Minute, Connect: 10 * time.Second,
			Client: 24 * time.Hour, Server: 24 * time.Hour, Tunnel: 24 * time.Hour,
		},
		Frontends: []lbconfig.Frontend{{
			Name:    "main",
			Binds:   []lbconfig.Bind{{Addr: netip.MustParseAddrPort("[::]:9445"), V4V6: true}},
			Backend: "masters",
		}},
		Backends: []lbconfig.Backend{{
			Name:            "masters",
			Balance:         lbconfig.RoundRobin,
			Check:           lbconfig.HTTPCheck{Method: "GET", URI: "/readyz", Version: "HTTP/1.0"},
			LogHealthChecks: true,
			DontLogNull:     true,
			Servers: []lbconfig.Server{
				server("managed-mbggk-master-0", "10.0.3.211:6443"),
				server("managed-mbggk-master-2", "10.0.3.229:6443"),
				server("managed-mbggk-master-1", "10.0.3.51:6443"),
			},
		}},
		Monitors: []lbconfig.Monitor{{
			Name:  "health_check_http_url",
			Binds: []lbconfig.Bind{{Addr: netip.MustParseAddrPort("[::]:50936"), V4V6: true}},
			URI:   "/haproxy_ready",
		}},
		Stats: []lbconfig.Stats{{
			Name:        "stats",
			Binds:       []lbconfig.Bind{{Addr: netip.MustParseAddrPort("127.0.0.1:50000"), Host: "localhost"}},
			URI:         "/haproxy_stats",
			Refresh:     30 * time.Second,
			HideVersion: true,
			Users:       []lbconfig.UserPass{{User: "Username", Pass: "Password"}},
		}},
		Proxies:     []string{"frontend main", "listen health_check_http_url", "listen stats", "backend masters"},
		StatsSocket: true,
		StatsSockets: []lbconfig.StatsSocket{
			{Network: "unix", Address: "/var/lib/haproxy/run/haproxy.sock", Mode: 0o600, Level: "admin"},
		},
	}
	// The seed's `log` line in defaults: every proxy sends there.
	seedLog := []lbconfig.LogTarget{{Network: "unixgram", Address: "/var/run/haproxy/haproxy-log.sock", Facility: 16, Level: lbconfig.LevelDebug}}
	want.Frontends[0].LogTargets, want.Backends[0].LogTargets = seedLog, seedLog
	// The monitor and stats sections take defaults' targets too: without
	// a log format, haproxy sends them a "Connect from" line per request.
	want.Monitors[0].LogTargets, want.Stats[0].LogTargets = seedLog, seedLog
	if diff := cmp.Diff(want, got, cmpOpts, cmp.FilterPath(func(p cmp.Path) bool {
		return p.String() == "Source"
	}, cmp.Ignore())); diff != "" {
		t.Errorf("seed 000 mismatch (-want +got):\n%s", diff)
	}
	for key, want := range map[string]string{
		"frontend main/bind 0":                          "testdata/seed000.cfg:16",
		"backend masters/server managed-mbggk-master-1": "testdata/seed000.cfg:37",
		"listen stats/stats auth 0":                     "testdata/seed000.cfg:30",
		"defaults/timeout tunnel":                       "testdata/seed000.cfg:14",
	} {
		if got := got.Source[key]; got != want {
			t.Errorf("Source[%q] = %q, want %q", key, got, want)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.cfg")
	if err := os.WriteFile(big, make([]byte, MaxFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want string
	}{
		{name: "missing", path: filepath.Join(dir, "nope.cfg"), want: "load haproxy config: open " + filepath.Join(dir, "nope.cfg") + ": no such file or directory"},
		{name: "too large", path: big, want: big + ": file is larger than 1048576 bytes (1 MiB)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Load(tt.path)
			if cfg != nil || err == nil {
				t.Fatalf("Load(%s) = %v, %v; want an error", tt.path, cfg, err)
			}
			if err.Error() != tt.want {
				t.Errorf("Load(%s) error:\n got %s\nwant %s", tt.path, err, tt.want)
			}
		})
	}
}

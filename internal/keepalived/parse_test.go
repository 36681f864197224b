package keepalived

import (
	"encoding/json"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the parser's output")

// cmpOpts compares netip values by value.
var cmpOpts = cmp.Options{
	cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
	cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
}

// testdataConfigs are the main files under testdata, each of which must be
// accepted by vipstack and by keepalived.
var testdataConfigs = []string{
	"testdata/seed000_master.conf",
	"testdata/seed000_worker.conf",
	"testdata/seed001_api.conf",
	"testdata/include/keepalived.conf",
	"testdata/issue27.conf",
	"testdata/scheduling.conf",
}

func parseFile(t *testing.T, name string) (*Config, error) {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return Parse(name, data, os.DirFS("."))
}

func TestParseTestdata(t *testing.T) {
	for _, name := range testdataConfigs {
		t.Run(strings.ReplaceAll(strings.TrimPrefix(name, "testdata/"), "/", "_"), func(t *testing.T) {
			got, err := parseFile(t, name)
			if err != nil {
				t.Fatalf("Parse(%s): %v", name, err)
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
			var want Config
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&want, got, cmpOpts); diff != "" {
				t.Errorf("Parse(%s) mismatch (-want +got):\n%s", name, diff)
			}
		})
	}
}

// TestParseWorker spells out the model of seed 000's worker config by hand,
// so the golden files are anchored to something written independently.
func TestParseWorker(t *testing.T) {
	got, err := parseFile(t, "testdata/seed000_worker.conf")
	if err != nil {
		t.Fatal(err)
	}
	const f = "testdata/seed000_worker.conf"
	want := &Config{
		Global: GlobalDefs{
			VRRPVersion: 2, GARPMasterDelay: 5 * time.Second, GARPMasterRepeat: 5,
			GARPMasterRefreshRepeat: 1, MaxAutoPriority: -1,
		},
		Scripts: map[string]*Script{"chk_ingress": {
			Name: "chk_ingress", Pos: Pos{f, 3},
			Command: "/usr/bin/timeout 0.9 /usr/bin/curl -o /dev/null -Lfs http://localhost:1936/healthz/ready",
			Args: []string{"/usr/bin/timeout", "0.9", "/usr/bin/curl", "-o", "/dev/null", "-Lfs",
				"http://localhost:1936/healthz/ready"},
			Interval: time.Second, Timeout: time.Second, Weight: 50, Rise: 1, Fall: 1,
		}},
		Instances: []*Instance{{
			Name: "managed_INGRESS", Pos: Pos{f, 11},
			InitialState: "BACKUP", Interface: "eth0", VRID: 75, Priority: 20,
			AdvertInterval: time.Second, Version: 2, Preempt: true,
			AuthType: "PASS", AuthPass: "managed_ingress_vip",
			VIPs:            []VIP{withPos(VIP{Prefix: netip.MustParsePrefix("10.0.0.7/32")}, Pos{f, 23})},
			TrackScripts:    []TrackScript{{Name: "chk_ingress", Pos: Pos{f, 26}}},
			GARPMasterDelay: 5 * time.Second, GARPMasterRepeat: 5, GARPMasterRefreshRepeat: 1,
			Accept: true,
		}},
		Warnings: []string{
			f + `:20: auth_pass is 19 characters; only the first 8 ("managed_") are sent, as keepalived does`,
			f + ":11: scripts are configured but enable_script_security is not set (keepalived reports a SECURITY VIOLATION)",
		},
		Files: []string{f},
	}
	if diff := cmp.Diff(want, got, cmpOpts); diff != "" {
		t.Errorf("Parse(%s) mismatch (-want +got):\n%s", f, diff)
	}
}

func TestLoadIncludes(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"keepalived.conf": "include conf.d/*.conf\ninclude " + filepath.ToSlash(filepath.Join(dir, "abs.conf")) + "\n",
		"conf.d/b.conf":   "vrrp_instance B {\n interface eth0\n virtual_router_id 2\n virtual_ipaddress {\n  include ../vips/b\n }\n}\n",
		"conf.d/a.conf":   "vrrp_instance A {\n interface eth0\n virtual_router_id 1\n virtual_ipaddress {\n 198.18.0.1\n }\n}\n",
		"conf.d/skip.txt": "garbage {\n",
		"vips/b":          "198.18.0.2/24\n",
		"abs.conf":        "global_defs {\n router_id abs\n}\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := Load(filepath.Join(dir, "keepalived.conf"))
	if err != nil {
		t.Fatal(err)
	}
	d := filepath.ToSlash(dir)
	wantFiles := []string{d + "/keepalived.conf", d + "/conf.d/a.conf", d + "/conf.d/b.conf", d + "/vips/b", d + "/abs.conf"}
	if diff := cmp.Diff(wantFiles, cfg.Files); diff != "" {
		t.Errorf("Files mismatch (-want +got):\n%s", diff)
	}
	var names []string
	for _, in := range cfg.Instances {
		names = append(names, in.Name)
	}
	if diff := cmp.Diff([]string{"A", "B"}, names); diff != "" {
		t.Errorf("instances mismatch (-want +got):\n%s", diff)
	}
	if got, want := cfg.Instances[1].VIPs[0].Pos(), (Pos{d + "/vips/b", 1}); got != want {
		t.Errorf("VIP position = %v, want %v", got, want)
	}
	if cfg.Global.RouterID != "abs" {
		t.Errorf("RouterID = %q, want abs (from the absolute include)", cfg.Global.RouterID)
	}

	if _, err := Load(filepath.Join(dir, "missing.conf")); err == nil || !strings.Contains(err.Error(), "missing.conf") {
		t.Errorf("Load(missing) = %v, want an error naming the file", err)
	}
}

func TestLoadTooLarge(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.conf")
	if err := os.WriteFile(p, make([]byte, MaxFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p)
	want := "load keepalived config " + filepath.ToSlash(p) + ": file is larger than 1048576 bytes (1 MiB)"
	if err == nil || err.Error() != want {
		t.Errorf("Load(big) = %v, want %q", err, want)
	}
}

// TestAcceptedKeywordsHandled feeds every accepted keyword to its block and
// checks none falls through to the "accepted but not handled" guard.
func TestAcceptedKeywordsHandled(t *testing.T) {
	blocks := []struct {
		list string
		wrap func(string) string
	}{
		{globalAccepted, func(kw string) string { return "global_defs {\n" + kw + "\n}\n" }},
		{scriptAccepted, func(kw string) string { return "vrrp_script s {\n" + kw + "\n}\n" }},
		{instanceAccepted, func(kw string) string { return "vrrp_instance i {\n" + kw + "\n}\n" }},
		{authAccepted, func(kw string) string { return "vrrp_instance i {\nauthentication {\n" + kw + "\n}\n}\n" }},
		{syncAccepted, func(kw string) string { return "vrrp_sync_group g {\n" + kw + "\n}\n" }},
	}
	for _, b := range blocks {
		for _, kw := range strings.Split(b.list, ", ") {
			if kw == "include" {
				continue
			}
			_, err := Parse("k.conf", []byte(b.wrap(kw)), fstest.MapFS{})
			if err != nil && (strings.Contains(err.Error(), "internal error") || strings.Contains(err.Error(), "unknown keyword")) {
				t.Errorf("keyword %q: %v", kw, err)
			}
		}
	}
}

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "/bin/true", want: []string{"/bin/true"}},
		{in: "  /usr/bin/timeout 1.9  /x.sh ", want: []string{"/usr/bin/timeout", "1.9", "/x.sh"}},
		{in: `/bin/sh -c 'echo "a b"'`, want: []string{"/bin/sh", "-c", `echo "a b"`}},
		{in: `a"b c"d`, want: []string{"ab cd"}},
		{in: `x '' y`, want: []string{"x", "", "y"}},
		{in: `\x41\102\cA\t\q\\`, want: []string{"AB\x01\tq\\"}},
		{in: `a\ b`, want: []string{"a b"}},
		{in: `'open`, wantErr: "missing terminating '"},
		{in: `trail\`, wantErr: "missing character after trailing backslash"},
		{in: "", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := SplitCommand(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("SplitCommand(%q) error = %v, want %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("SplitCommand(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseSeconds(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{in: "1", want: time.Second, ok: true},
		{in: "0.01", want: 10 * time.Millisecond, ok: true},
		{in: "40.95", want: 40950 * time.Millisecond, ok: true},
		{in: "0.000001", want: time.Microsecond, ok: true},
		{in: "4294.967295", want: maxTimer, ok: true},
		{in: "0.0000001"},
		{in: "1."},
		{in: ".5"},
		{in: "-1"},
		{in: "1e3"},
		{in: "12345678901"},
		{in: ""},
	}
	for _, tt := range tests {
		got, ok := parseSeconds(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseSeconds(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// TestConditionalLines: keepalived's "@ID line" is read only with config ID
// ID (-i), "@^ID line" only without it (keepalived 2.2.7, measured with
// keepalived -t -i n1 / -i n2 on a file whose @n1 and @^n1 lines are each
// out of range: only the line for the given ID is reported).
func TestConditionalLines(t *testing.T) {
	conf := "vrrp_instance VI {\n interface eth0\n virtual_router_id 1\n@n1 priority 101\n@n2\tpriority 100\n" +
		"@^n1 advert_int 3\n virtual_ipaddress {\n  198.18.0.1\n }\n}\n"
	for _, tc := range []struct {
		id       string
		prio     uint8
		interval time.Duration
	}{
		{id: "n1", prio: 101, interval: time.Second},
		{id: "n2", prio: 100, interval: 3 * time.Second},
		{id: "other", prio: 100, interval: 3 * time.Second},
	} {
		cfg, err := ParseID("k.conf", []byte(conf), fstest.MapFS{}, tc.id)
		if err != nil {
			t.Fatalf("-i %s: %v", tc.id, err)
		}
		in := cfg.Instances[0]
		if in.Priority != tc.prio || in.AdvertInterval != tc.interval {
			t.Errorf("-i %s: priority %d, advert_int %v; want %d, %v", tc.id, in.Priority, in.AdvertInterval, tc.prio, tc.interval)
		}
	}
	if _, err := ParseID("k.conf", []byte("@ priority 1\n"), fstest.MapFS{}, "n1"); err == nil ||
		!strings.Contains(err.Error(), "k.conf:1: conditional line \"@ priority 1\" has no config ID after @") {
		t.Errorf("\"@ priority 1\": %v, want an error naming the line", err)
	}
}

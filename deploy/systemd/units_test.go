// Package systemd_test checks the systemd units for bare hosts: they pass
// systemd-analyze verify, and each grants exactly the capabilities its
// command needs (docs/security.md).
package systemd_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const binary = "/usr/local/bin/vipstack"

// unit is the [Service] section of a unit file: every value of each key.
type unit map[string][]string

func (u unit) one(key string) string {
	if v := u[key]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

func parse(t *testing.T, path string) unit {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := unit{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s: %q is not KEY=VALUE", path, line)
			}
			u[k] = append(u[k], v)
		}
	}
	return u
}

func units(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.service")
	if err != nil || len(files) == 0 {
		t.Fatalf("no units in deploy/systemd: %v", err)
	}
	return files
}

// TestUnitsVerify runs systemd-analyze verify on every unit (a template
// as an instance), with the binary's path pointing at an executable that
// exists here. verify exits 0 after warnings such as an unknown key, so
// any output is a failure too.
func TestUnitsVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian: apt-get install systemd)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range units(t) {
		t.Run(f, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			name := strings.Replace(f, "@.service", "@test.service", 1)
			path := filepath.Join(t.TempDir(), name)
			if err := os.WriteFile(path, bytes.ReplaceAll(b, []byte(binary), []byte(self)), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(analyze, "verify", path).CombinedOutput()
			if err != nil || len(bytes.TrimSpace(out)) > 0 {
				t.Errorf("systemd-analyze verify %s: %v\n%s", f, err, out)
			}
		})
	}
}

// need is what each command needs, from docs/security.md: NET_ADMIN
// (VIPs over rtnetlink, nftables rules), NET_RAW (VRRP, gratuitous ARP,
// NA sockets), NET_BIND_SERVICE (ports below 1024: the node's DNS on 53,
// the balancer's frontends). Whether it reloads on SIGHUP is from
// cmd/vipstack (ipfailover ignores it: its settings are the environment).
type needs struct {
	caps    []string
	reloads bool
}

func need() map[string]needs {
	return map[string]needs{
		"node":       {caps: []string{"CAP_NET_ADMIN", "CAP_NET_BIND_SERVICE", "CAP_NET_RAW"}, reloads: true},
		"vrrp":       {caps: []string{"CAP_NET_ADMIN", "CAP_NET_RAW"}, reloads: true},
		"ipfailover": {caps: []string{"CAP_NET_ADMIN", "CAP_NET_RAW"}},
		// NET_ADMIN for --redirect's nftables rule (the API VIP's port).
		"lb": {caps: []string{"CAP_NET_ADMIN", "CAP_NET_BIND_SERVICE"}, reloads: true},
	}
}

func TestUnitCapabilities(t *testing.T) {
	need := need()
	seen := map[string]bool{}
	for _, f := range units(t) {
		t.Run(f, func(t *testing.T) {
			u := parse(t, f)
			args := strings.Fields(u.one("ExecStart"))
			if len(args) < 2 || args[0] != binary {
				t.Fatalf("ExecStart=%s: want %s COMMAND ...", u.one("ExecStart"), binary)
			}
			cmd := args[1]
			want, ok := need[cmd]
			if !ok {
				t.Fatalf("ExecStart runs vipstack %s, which this test does not know: add what it needs from docs/security.md", cmd)
			}
			seen[cmd] = true
			for _, key := range []string{"CapabilityBoundingSet", "AmbientCapabilities"} {
				got := strings.Fields(u.one(key))
				slices.Sort(got)
				if diff := cmp.Diff(want.caps, got); diff != "" {
					t.Errorf("%s of vipstack %s (-want +got):\n%s", key, cmd, diff)
				}
			}
			for key, v := range map[string]string{"User": "root", "NoNewPrivileges": "yes", "Restart": "on-failure"} {
				if got := u.one(key); got != v {
					t.Errorf("%s=%s, want %s", key, got, v)
				}
			}
			reload := u.one("ExecReload")
			switch {
			case want.reloads && reload != "/bin/kill -HUP $MAINPID":
				t.Errorf("ExecReload=%s: vipstack %s reloads on SIGHUP; want /bin/kill -HUP $MAINPID", reload, cmd)
			case !want.reloads && reload != "":
				t.Errorf("ExecReload=%s: vipstack %s does not reload on SIGHUP", reload, cmd)
			}
			// The ledger of held VIPs lives in the unit's runtime directory.
			for i, a := range args {
				if a == "--state-dir" && i+1 < len(args) {
					if dir := "/run/" + u.one("RuntimeDirectory"); args[i+1] != dir {
						t.Errorf("--state-dir %s, but RuntimeDirectory is %s", args[i+1], dir)
					}
				}
			}
			if cmd != "lb" && !slices.Contains(args, "--state-dir") {
				t.Errorf("ExecStart=%s: want --state-dir in the unit's RuntimeDirectory", u.one("ExecStart"))
			}
		})
	}
	for cmd := range need {
		if !seen[cmd] {
			t.Errorf("no unit runs vipstack %s", cmd)
		}
	}
}

// TestSecurityDocMatchesNodeUnit: docs/security.md's systemd example and
// vipstack-node.service grant the same capabilities.
func TestSecurityDocMatchesNodeUnit(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```ini\n(.*?)```").FindSubmatch(b)
	if block == nil {
		t.Fatal("docs/security.md has no ```ini block")
	}
	doc := filepath.Join(t.TempDir(), "doc.service")
	if err := os.WriteFile(doc, block[1], 0o644); err != nil {
		t.Fatal(err)
	}
	d, n := parse(t, doc), parse(t, "vipstack-node.service")
	for _, key := range []string{"CapabilityBoundingSet", "AmbientCapabilities", "NoNewPrivileges", "User"} {
		if d.one(key) != n.one(key) {
			t.Errorf("%s: docs/security.md says %q, vipstack-node.service %q", key, d.one(key), n.one(key))
		}
	}
}

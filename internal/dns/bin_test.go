package dns

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The vipstack binary, built once per test run (set by vipstackBin only).
var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// vipstackBin builds cmd/vipstack once per test run, or returns
// $VIPSTACK_BIN when set. Until main.go dispatches "dns" to runDNS, the
// build overlays a main.go that does, so these tests do not wait for that
// one line.
func vipstackBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("VIPSTACK_BIN"); p != "" {
		return p
	}
	binOnce.Do(func() { binPath, binErr = buildVipstack() })
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func buildVipstack() (string, error) {
	dir, err := os.MkdirTemp("", "vsJ-bin-")
	if err != nil {
		return "", err
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	bin := filepath.Join(dir, "vipstack")
	args := []string{"build", "-o", bin}
	mainGo := filepath.Join(root, "cmd", "vipstack", "main.go")
	src, err := os.ReadFile(mainGo)
	if err != nil {
		return "", err
	}
	if !strings.Contains(string(src), "runDNS(") {
		patched := strings.Replace(string(src), "\tcase \"vrrp\":\n",
			"\tcase \"dns\":\n\t\treturn runDNS(ctx, args[1:], stdout, stderr)\n\tcase \"vrrp\":\n", 1)
		if patched == string(src) {
			return "", fmt.Errorf("cannot add the dns case to %s: no `case \"vrrp\":` line", mainGo)
		}
		pf := filepath.Join(dir, "main.go")
		ov := filepath.Join(dir, "overlay.json")
		js, _ := json.Marshal(map[string]any{"Replace": map[string]string{mainGo: pf}})
		if err := os.WriteFile(pf, []byte(patched), 0o644); err != nil {
			return "", err
		}
		if err := os.WriteFile(ov, js, 0o644); err != nil {
			return "", err
		}
		args = append(args, "-overlay", ov)
	}
	cmd := exec.Command("go", append(args, "./cmd/vipstack")...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/vipstack: %v\n%s", err, b)
	}
	return bin, nil
}

// TestBinaryCLI runs `vipstack dns` for what needs no network: the plugin
// list, -check, and flags that belong to CoreDNS's own command line (which
// coremain registers on the standard flag set) and must be rejected.
func TestBinaryCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/vipstack")
	}
	bin := vipstackBin(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.Corefile")
	bad := filepath.Join(dir, "bad.Corefile")
	os.WriteFile(good, []byte(".:1053 {\n    clusterdns managed.example.com {\n        api 198.18.0.5\n    }\n}\n"), 0o644)
	os.WriteFile(bad, []byte(".:1053 {\n    clusterdns managed.example.com {\n        api 198.18.0.5\n        ingress 198.18.0\n    }\n}\n"), 0o644)
	mdnsBad := filepath.Join(dir, "mdnsbad.Corefile")
	os.WriteFile(mdnsBad, []byte(".:1053 {\n    mdns example.com 0 ostest 198.18.0.x\n}\n"), 0o644)
	long := strings.Repeat("c", 30) + " Workstation-" + strings.Repeat("n", 25)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string // substring of stdout+stderr
	}{
		{name: "plugins", args: []string{"-plugins"}, wantCode: 0, wantOut: strings.Join(Directives(), "\n")},
		{name: "check good", args: []string{"-check", "-conf", good}, wantCode: 0, wantOut: "good.Corefile: Corefile is valid"},
		// OpenShift's current on-prem Corefile (machine-config-operator
		// templates/common/on-prem/files/coredns-corefile.yaml, rendered):
		// before the mdns directive, "Corefile:4: unknown plugin \"mdns\"".
		{name: "check OpenShift's mdns Corefile", args: []string{"-check", "-conf", "testdata/openshift-mdns.Corefile"}, wantCode: 0, wantOut: "openshift-mdns.Corefile: Corefile is valid"},
		{name: "check bad mdns BIND_ADDRESS", args: []string{"-check", "-conf", mdnsBad}, wantCode: 1, wantOut: `mdnsbad.Corefile:2 - Error during parsing: BIND_ADDRESS "198.18.0.x" is not an IP address`},
		{name: "check bad", args: []string{"-check", "-conf", bad}, wantCode: 1, wantOut: `bad.Corefile:4 - Error during parsing: ingress: "198.18.0" is not an IP address`},
		{name: "missing Corefile", args: []string{"-conf", filepath.Join(dir, "none")}, wantCode: 1, wantOut: "no such file"},
		{name: "CoreDNS's -p is not ours", args: []string{"-p", "53"}, wantCode: 2, wantOut: "flag provided but not defined: -p"},
		{name: "CoreDNS's -version is not ours", args: []string{"-version"}, wantCode: 2, wantOut: "flag provided but not defined: -version"},
		{name: "stray argument", args: []string{"-conf", good, "extra"}, wantCode: 2, wantOut: `unexpected arguments ["extra"]`},
		{name: "mdns without node", args: []string{"-mdns-cluster", "c1", "-conf", good}, wantCode: 2, wantOut: "-mdns-cluster needs -node-name and at least one -node-addr"},
		{name: "bad node address", args: []string{"-node-addr", "198.18.0.x"}, wantCode: 2, wantOut: `"198.18.0.x" is not an IP address`},
		{name: "names too long for mdns-publisher's instance label", wantCode: 2, wantOut: `make the 68-byte OpenShift instance label "` + long + `"`,
			args: []string{"-check", "-conf", good, "-mdns-cluster", strings.Repeat("c", 30), "-node-name", strings.Repeat("n", 25), "-node-addr", "198.18.0.11"}},
		{name: "the same names with -mdns-openshift=false", wantCode: 0, wantOut: "Corefile is valid",
			args: []string{"-check", "-conf", good, "-mdns-cluster", strings.Repeat("c", 30), "-node-name", strings.Repeat("n", 25), "-node-addr", "198.18.0.11", "-mdns-openshift=false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := exec.Command(bin, append([]string{"dns"}, tt.args...)...).CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d; output:\n%s", code, tt.wantCode, out)
			}
			if !strings.Contains(string(out), tt.wantOut) {
				t.Errorf("output does not contain %q:\n%s", tt.wantOut, out)
			}
		})
	}
}

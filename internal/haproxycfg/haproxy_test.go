package haproxycfg

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// haproxyCheck runs haproxy 2.6's own configuration check, `haproxy -c`,
// on conf, and reports whether haproxy accepts it and what it printed. It
// skips the test when haproxy is not installed. haproxy -c binds no socket
// and connects nowhere.
func haproxyCheck(t *testing.T, conf []byte) (bool, string) {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("haproxy not installed")
	}
	path := filepath.Join(t.TempDir(), "h.cfg")
	if err := os.WriteFile(path, conf, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-c", "-f", path).CombinedOutput()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		t.Fatalf("haproxy -c: %v", err)
	}
	return err == nil, strings.TrimSpace(string(out))
}

// TestHaproxyAgrees runs haproxy -c on every testdata config, which
// vipstack accepts (TestParseTestdata): haproxy must accept it too, with
// no warning, so the two read the same files.
func TestHaproxyAgrees(t *testing.T) {
	for _, name := range testdataConfigs {
		t.Run(strings.TrimPrefix(name, "testdata/"), func(t *testing.T) {
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Parse(name, data); err != nil {
				t.Fatalf("vipstack rejects %s: %v", name, err)
			}
			ok, out := haproxyCheck(t, data)
			if !ok || out != "Configuration file is valid" {
				t.Errorf("haproxy -c -f %s: valid=%v, output:\n%s", name, ok, out)
			}
		})
	}
}

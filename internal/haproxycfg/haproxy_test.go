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

// haproxyWarningStarts are how the warnings vipstack writes in haproxy's
// words begin (after "file:line: ").
var haproxyWarningStarts = []string{"'", "backend '", "a '", "previous '", "unexpected character '",
	"missing timeouts for ", "log format ignored for ", "parsing acl keyword ", "header '", "content-type '", "config: Can't open "}

// quotesHaproxy reports whether a vipstack warning is one of haproxy's.
func quotesHaproxy(msg string) bool {
	for _, s := range haproxyWarningStarts {
		if strings.HasPrefix(msg, s) {
			return true
		}
	}
	return false
}

// haproxyWarned reports whether haproxy -c's output has the warning msg,
// with each warning's continuation lines ("   | ...", "  ...") joined to
// its first line by single spaces, as vipstack writes it on one line.
func haproxyWarned(out, msg string) bool {
	var joined []string
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "|"))
		switch {
		case t == "":
		case strings.HasPrefix(l, " ") && len(joined) > 0:
			joined[len(joined)-1] += " " + t
		default:
			joined = append(joined, strings.TrimSpace(l))
		}
	}
	for _, j := range joined {
		if strings.Contains(j, msg) {
			return true
		}
	}
	return false
}

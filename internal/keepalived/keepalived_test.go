package keepalived

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// keepalivedLine matches a keepalived -t diagnostic that names a line, e.g.
// "(conf.d/a.conf: Line 6) Truncating auth_pass to 8 characters"; keepalived
// leaves the file out for some global_defs messages.
var keepalivedLine = regexp.MustCompile(`^\((?:(.+): )?Line (\d+)\) (.*)$`)

// TestKeepalivedAgrees runs keepalived's own config check on every testdata
// config. Each diagnostic keepalived prints must be matched by a vipstack
// warning on the same file and line (or, for its SECURITY VIOLATION note, by
// vipstack's enable_script_security warning), so both accept the same files
// and complain about the same things.
func TestKeepalivedAgrees(t *testing.T) {
	bin, err := exec.LookPath("keepalived")
	if err != nil {
		t.Skip("keepalived not installed")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: keepalived -t flags scripts as insecure when not run as root")
	}
	if _, err := net.InterfaceByName("eth0"); err != nil {
		t.Skip("needs an eth0 interface: keepalived -t checks that configured interfaces exist")
	}
	for _, name := range testdataConfigs {
		t.Run(strings.ReplaceAll(strings.TrimPrefix(name, "testdata/"), "/", "_"), func(t *testing.T) {
			cfg, err := parseFile(t, name)
			if err != nil {
				t.Fatalf("vipstack rejects %s: %v", name, err)
			}
			var stderr bytes.Buffer
			cmd := exec.Command(bin, "-t", "-f", name)
			cmd.Stdout, cmd.Stderr = &stderr, &stderr
			runErr := cmd.Run()
			out := strings.TrimSpace(stderr.String())
			if runErr != nil && out == "" {
				t.Fatalf("keepalived -t -f %s: %v with no diagnostics", name, runErr)
			}
			for _, l := range strings.Split(out, "\n") {
				if l == "" {
					continue
				}
				if !matchedByWarning(l, name, cfg.Warnings) {
					t.Errorf("keepalived -t -f %s says %q; vipstack has no matching warning in %q", name, l, cfg.Warnings)
				}
			}
		})
	}
}

func matchedByWarning(diag, mainFile string, warnings []string) bool {
	if strings.HasPrefix(diag, "SECURITY VIOLATION") {
		for _, w := range warnings {
			if strings.Contains(w, "enable_script_security is not set") {
				return true
			}
		}
		return false
	}
	m := keepalivedLine.FindStringSubmatch(diag)
	if m == nil {
		return false
	}
	file := m[1]
	if file == "" {
		file = mainFile
	}
	for _, w := range warnings {
		f, rest, _ := strings.Cut(w, ":")
		line, _, _ := strings.Cut(rest, ":")
		if line == m[2] && (f == file || strings.HasSuffix(f, "/"+file)) {
			return true
		}
	}
	return false
}

package engine_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/script"
)

// checkConf is a valid configuration the --check cases break one line of.
const checkConf = `global_defs {
    router_id n1
    enable_script_security
    script_user root
}
vrrp_script chk {
    script "/bin/true"
    interval 1
}
vrrp_instance VI_1 {
    state BACKUP
    interface eth0
    virtual_router_id 51
    priority 100
    advert_int 1
    virtual_ipaddress {
        198.18.0.100/32
    }
    track_script {
        chk
    }
}
`

// lineOf returns the 1-based line of the first line of text containing s.
func lineOf(t *testing.T, text, s string) int {
	t.Helper()
	for i, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("%q not in the configuration", s)
	return 0
}

func mustReplace(t *testing.T, text, old, new string) string {
	t.Helper()
	if !strings.Contains(text, old) {
		t.Fatalf("%q not in the configuration", old)
	}
	return strings.Replace(text, old, new, 1)
}

// TestCheckRejectsBadConfigWithLine runs `vipstack vrrp --check`: a bad
// file exits 1 and names file:line and the offending keyword or value; a
// good file exits 0.
func TestCheckRejectsBadConfigWithLine(t *testing.T) {
	bin := vipstackBin(t)
	// The file names an interface of this host: a missing one is a warning
	// (exit 5).
	ifname := "lo"
	if ifs, err := net.Interfaces(); err == nil {
		for _, ifi := range ifs {
			if ifi.Flags&net.FlagLoopback == 0 {
				ifname = ifi.Name
				break
			}
		}
	}
	conf := strings.ReplaceAll(checkConf, "interface eth0", "interface "+ifname)
	tests := []struct {
		name string
		conf string
		// at is a string on the line the error or warning must name (""
		// for a clean file); want is what the message must contain.
		at   string
		want []string
		// code is the exit status, keepalived -t's (2.2.7, measured) for
		// the same file: 5 for errors and for warnings alone, 6 for
		// scripts without enable_script_security.
		code int
	}{
		{name: "valid", conf: conf},
		{
			name: "warning only: auth_pass truncated",
			conf: mustReplace(t, conf, "    priority 100\n", "    priority 100\n    authentication {\n        auth_type PASS\n        auth_pass managed_api_vip\n    }\n"),
			at:   "auth_pass",
			want: []string{"warning:", "only the first 8"},
			code: 5,
		},
		{
			name: "warning only: scripts without enable_script_security",
			conf: mustReplace(t, conf, "    enable_script_security\n    script_user root\n", ""),
			at:   "vrrp_instance",
			want: []string{"warning:", "enable_script_security is not set"},
			code: 6,
		},
		{
			name: "warning only: interface missing here",
			conf: strings.ReplaceAll(conf, "interface "+ifname, "interface vsBnosuch0"),
			at:   "vrrp_instance",
			want: []string{"warning:", `"vsBnosuch0"`, "does not exist here"},
			code: 5,
		},
		{
			name: "unknown keyword",
			conf: mustReplace(t, conf, "    priority 100\n", "    priority 100\n    frobnicate yes\n"),
			at:   "frobnicate",
			want: []string{`"frobnicate"`, "unknown keyword"},
			code: 5,
		},
		{
			name: "virtual_server",
			conf: conf + "virtual_server 198.18.0.100 80 {\n    delay_loop 6\n}\n",
			at:   "virtual_server",
			want: []string{`"virtual_server"`, "not supported"},
			code: 5,
		},
		{
			name: "VRID out of range",
			conf: mustReplace(t, conf, "virtual_router_id 51", "virtual_router_id 300"),
			at:   "virtual_router_id",
			want: []string{"virtual_router_id 300", "1..255"},
			code: 5,
		},
		{
			// keepalived 2.2.7 warns "(VI_1) track script chk_missing not
			// found, ignoring..." and runs the instance without it.
			name: "warning only: track_script undefined",
			conf: mustReplace(t, conf, "        chk\n    }\n}", "        chk_missing\n    }\n}"),
			at:   "chk_missing",
			want: []string{"(VI_1) track script chk_missing not found, ignoring..."},
			code: 5,
		},
		{
			// keepalived 2.2.7: "Disabling track script chk since not
			// found/accessible"; -t exits 5.
			name: "warning only: vrrp_script file missing",
			conf: mustReplace(t, conf, `"/bin/true"`, `"/nonexistent/vska-chk.sh"`),
			at:   "vrrp_script chk",
			want: []string{"Disabling track script chk since not found/accessible", "no such file or directory"},
			code: 5,
		},
	}
	if _, err := user.Lookup(script.DefaultUser); err != nil {
		// keepalived 2.2.7 drops every script then and -t exits 5; so does
		// vipstack, with a warning for each.
		tests = append(tests, struct {
			name string
			conf string
			at   string
			want []string
			code int
		}{
			name: "warning only: enable_script_security without script_user or a keepalived_script user",
			conf: mustReplace(t, conf, "    script_user root\n", ""),
			at:   "vrrp_script chk",
			want: []string{"enable_script_security is set, script_user is not", "want script_user USERNAME"},
			code: 5,
		})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "keepalived.conf")
			if err := os.WriteFile(path, []byte(tt.conf), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "vrrp", "--check", "-f", path)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			if ee, ok := errors.AsType[*exec.ExitError](err); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if tt.at == "" {
				if code != 0 || !strings.Contains(stdout.String(), "configuration is valid") {
					t.Fatalf("exit %d, stdout %q, stderr %q; want exit 0 and \"configuration is valid\"", code, stdout.String(), stderr.String())
				}
				return
			}
			if code != tt.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.code, stderr.String())
			}
			want := append([]string{fmt.Sprintf("%s:%d:", path, lineOf(t, tt.conf, tt.at))}, tt.want...)
			for _, w := range want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q does not contain %q", stderr.String(), w)
				}
			}
			warningsOnly := strings.HasPrefix(tt.name, "warning only")
			if got := strings.Contains(stdout.String(), "valid with"); got != warningsOnly {
				t.Errorf("stdout %q: says \"valid with\" warnings %v, want %v", stdout.String(), got, warningsOnly)
			}
		})
	}
}

// vrrpInstance is one vrrp_instance of a configuration for renderConf.
type vrrpInstance struct {
	name  string
	vrid  int
	vip   string
	extra string // more lines inside the block
}

// renderConf returns a VRRPv3 keepalived.conf (advert_int 100ms, priority
// 100, interface eth0) with the given global_defs lines and instances.
func renderConf(global string, ins ...vrrpInstance) string {
	var b strings.Builder
	fmt.Fprintf(&b, "global_defs {\n    router_id n1\n    vrrp_version 3\n%s}\n", global)
	for _, in := range ins {
		fmt.Fprintf(&b, `vrrp_instance %s {
    state BACKUP
    interface eth0
    virtual_router_id %d
    priority 100
    advert_int 0.1
    virtual_ipaddress {
        %s/32
    }
%s}
`, in.name, in.vrid, in.vip, in.extra)
	}
	return b.String()
}

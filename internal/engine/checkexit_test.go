package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/keepalived"
)

// TestCheckExit: `vipstack vrrp --check` exits as keepalived 2.2.7's -t
// does (measured in a namespace with the interface present): 0 for a clean
// file, 5 for errors and for warnings alone, 6 for scripts run without
// enable_script_security whatever else is wrong.
func TestCheckExit(t *testing.T) {
	const instance = "vrrp_instance VI_1 {\n interface eth0\n virtual_router_id 51\n virtual_ipaddress {\n  198.18.0.100/32\n }\n%s}\n"
	conf := func(global, script, extra string) string {
		return global + script + strings.Replace(instance, "%s", extra, 1)
	}
	const (
		secure = "global_defs {\n enable_script_security\n script_user root\n}\n"
		chk    = "vrrp_script chk {\n script /bin/true\n}\n"
		track  = " track_script {\n  chk\n }\n"
	)
	for _, tc := range []struct {
		name     string
		conf     string
		loadErr  error // Check's error, for the cases it refuses
		missing  []string
		wantCode int
	}{{
		name:     "clean: keepalived -t exits 0",
		conf:     conf("", "", ""),
		wantCode: 0,
	}, {
		name:     "clean with secure scripts",
		conf:     conf(secure, chk, track),
		wantCode: 0,
	}, {
		name:     "warning only, a truncated auth_pass: keepalived -t exits 5",
		conf:     conf("", "", " authentication {\n  auth_type PASS\n  auth_pass managed_api_vip\n }\n"),
		wantCode: 5,
	}, {
		name:     "warning only, nopreempt with state MASTER: keepalived -t exits 5",
		conf:     conf("", "", " state MASTER\n nopreempt\n"),
		wantCode: 5,
	}, {
		name:     "missing interface: keepalived -t exits 5",
		conf:     conf("", "", ""),
		missing:  []string{"k.conf:1: interface \"eth0\" (interface of vrrp_instance VI_1) does not exist here"},
		wantCode: 5,
	}, {
		name:     "errors: keepalived -t exits 5",
		loadErr:  errors.New("k.conf:3: virtual_router_id 300 is out of range (accepted: 1..255)"),
		wantCode: 5,
	}, {
		name:     "scripts without enable_script_security: keepalived -t exits 6",
		conf:     conf("", chk, track),
		wantCode: 6,
	}, {
		name:     "scripts without enable_script_security and a warning: still 6",
		conf:     conf("", chk, track+" state MASTER\n nopreempt\n"),
		wantCode: 6,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg *keepalived.Config
			var warnings []string
			if tc.loadErr == nil {
				var err error
				cfg, err = keepalived.Parse("k.conf", []byte(tc.conf), nil)
				if err != nil {
					t.Fatal(err)
				}
				warnings = append(cfg.Warnings, tc.missing...)
			}
			if got := CheckExit(cfg, tc.loadErr, warnings); got != tc.wantCode {
				t.Errorf("CheckExit = %d, want %d (warnings %q)", got, tc.wantCode, warnings)
			}
		})
	}
}

package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/version"
)

func TestRunDispatch(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{args: []string{"version"}, wantCode: 0, wantOut: "vipstack " + version.String()},
		{args: nil, wantCode: 2, wantErr: "Usage:"},
		{args: []string{"frobnicate"}, wantCode: 2, wantErr: `unknown command "frobnicate"`},
		{args: []string{"vrrp", "--status-addr", "0.0.0.0:9651", "-f", "/nonexistent"}, wantCode: 2, wantErr: "loopback only"},
		{args: []string{"vrrp", "--log-level", "loud"}, wantCode: 2, wantErr: `--log-level "loud"`},
		{args: []string{"vrrp", "--check", "-f", "/nonexistent/keepalived.conf"}, wantCode: 5, wantErr: "/nonexistent/keepalived.conf"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tc.args, &out, &errb)
			if code != tc.wantCode || !strings.Contains(out.String(), tc.wantOut) || !strings.Contains(errb.String(), tc.wantErr) {
				t.Fatalf("run(%q) = %d\nstdout: %s\nstderr: %s\nwant code %d, stdout containing %q, stderr containing %q",
					tc.args, code, out.String(), errb.String(), tc.wantCode, tc.wantOut, tc.wantErr)
			}
		})
	}
}

package haproxycfg

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestParseLogHost: a log target given as a host name is resolved once,
// at parse time, as haproxy does at start (the first address of the
// family asked for); one that does not resolve is haproxy's error.
func TestParseLogHost(t *testing.T) {
	lookup := func(host string) ([]netip.Addr, error) {
		switch host {
		case "rsyslog":
			return []netip.Addr{netip.MustParseAddr("198.18.0.7"), netip.MustParseAddr("fd00::7")}, nil
		case "v6only":
			return []netip.Addr{netip.MustParseAddr("fd00::8")}, nil
		}
		return nil, errors.New("no such host")
	}
	tests := []struct {
		target string
		want   lbconfig.LogTarget
		err    string
	}{
		{target: "rsyslog", want: lbconfig.LogTarget{Network: "udp", Address: "198.18.0.7:514"}},
		{target: "rsyslog:5514", want: lbconfig.LogTarget{Network: "udp", Address: "198.18.0.7:5514"}},
		{target: "udp6@rsyslog:5514", want: lbconfig.LogTarget{Network: "udp", Address: "[fd00::7]:5514"}},
		{target: "v6only", want: lbconfig.LogTarget{Network: "udp", Address: "[fd00::8]:514"}},
		{target: "localhost:5514", want: lbconfig.LogTarget{Network: "udp", Address: "127.0.0.1:5514"}},
		{target: "ipv4@v6only", err: "h.cfg:2: log : invalid address: 'v6only' in 'ipv4@v6only' (the name does not resolve here; accepted: a host name this system resolves at start, an IP address, an absolute path, stdout or stderr)"},
		{target: "nosuch.invalid:514", err: "h.cfg:2: log : invalid address: 'nosuch.invalid' in 'nosuch.invalid:514' (no such host; accepted: a host name this system resolves at start, an IP address, an absolute path, stdout or stderr)"},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			conf := "global\n  log " + tt.target + " local0\ndefaults\n  timeout connect 5s\n  timeout client 5s\n  timeout server 5s\nfrontend f\n  log global\n  bind 127.0.0.1:47011\n  default_backend b\nbackend b\n  server s 127.0.0.1:47012\n"
			cfg, err := ParseWith("h.cfg", []byte(conf), Options{LookupHost: lookup})
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.Frontends[0].LogTargets[0]
			if diff := cmp.Diff(tt.want, lbconfig.LogTarget{Network: got.Network, Address: got.Address}); diff != "" {
				t.Errorf("target (-want +got):\n%s", diff)
			}
		})
	}
	// haproxy resolves the names this host knows and refuses the others.
	for target, valid := range map[string]bool{"localhost:5514": true, "nosuch.invalid:514": false} {
		conf := "global\n  log " + target + " local0\ndefaults\n  timeout connect 5s\n  timeout client 5s\n  timeout server 5s\nfrontend f\n  bind 127.0.0.1:47011\n"
		ok, out := haproxyCheck(t, []byte(conf))
		if ok != valid || !valid && !strings.Contains(out, "invalid address: 'nosuch.invalid'") {
			t.Errorf("haproxy -c on log %s: valid=%v, want %v:\n%s", target, ok, valid, out)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"strings"
	"testing"
)

func TestIPFailoverArguments(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{name: "VIPs required", args: nil, wantCode: 2, wantErr: "OPENSHIFT_HA_VIRTUAL_IPS is required"},
		{name: "unknown variable", env: map[string]string{"OPENSHIFT_HA_VIRTUAL_IPS": "198.18.0.100", "OPENSHIFT_HA_WATCH_PORT": "80"},
			wantCode: 2, wantErr: `OPENSHIFT_HA_WATCH_PORT="80": unknown variable`},
		{name: "bad value named by variable", env: map[string]string{"OPENSHIFT_HA_VIRTUAL_IPS": "198.18.0.100", "OPENSHIFT_HA_REPLICA_COUNT": "three"},
			wantCode: 2, wantErr: `OPENSHIFT_HA_REPLICA_COUNT="three": want a number of nodes`},
		{name: "bad value named by flag", env: map[string]string{"OPENSHIFT_HA_VIRTUAL_IPS": "198.18.0.100"}, args: []string{"-w", "x"},
			wantCode: 2, wantErr: `--watch-port="x": want a TCP port number`},
		{name: "flag wins over the environment", env: map[string]string{"OPENSHIFT_HA_VIRTUAL_IPS": "bad"}, args: []string{"--virtual-ips", "198.18.0.100", "--vrrp-version", "4"},
			wantCode: 2, wantErr: "VRRP version 4: want 2 or 3"},
		{name: "two names", env: map[string]string{"OPENSHIFT_HA_VIRTUAL_IPS": "198.18.0.100"}, args: []string{"a", "b"},
			wantCode: 2, wantErr: "want at most one argument"},
		{name: "bad log level", env: map[string]string{"OPENSHIFT_HA_VIRTUAL_IPS": "198.18.0.100"}, args: []string{"--log-level", "loud"},
			wantCode: 2, wantErr: `--log-level "loud"`},
		{name: "status on loopback only", env: map[string]string{"OPENSHIFT_HA_VIRTUAL_IPS": "198.18.0.100"}, args: []string{"--status-addr", "0.0.0.0:9651"},
			wantCode: 2, wantErr: "loopback only"},
		{name: "help lists the variables", args: []string{"-h"}, wantCode: 0, wantErr: "OPENSHIFT_HA_MONITOR_PORT, default \"80\""},
		{name: "print the configuration", env: map[string]string{"OPENSHIFT_HA_VIRTUAL_IPS": "198.18.0.100-101", "OPENSHIFT_HA_MONITOR_PORT": "0",
			"OPENSHIFT_HA_NETWORK_INTERFACE": "lo", "OPENSHIFT_HA_REPLICA_COUNT": "2"},
			args: []string{"--print-config", "--vrid-probe", "0", "mypool"}, wantCode: 0,
			wantOut: "vrrp_instance mypool_VIP_2 {"},
		// keepalived runs an IPv6 instance of a vrrp_version 2
		// configuration (the image's) as version 3; so does the pool.
		{name: "IPv6 VIPs run VRRPv3 by default", env: map[string]string{"OPENSHIFT_HA_VIRTUAL_IPS": "fd00::1-3", "OPENSHIFT_HA_MONITOR_PORT": "0",
			"OPENSHIFT_HA_NETWORK_INTERFACE": "lo"},
			args: []string{"--print-config", "--vrid-probe", "0"}, wantCode: 0,
			wantOut: "vrrp_version 3\n"},
		// Every node would rank itself last: one rank for all.
		{name: "node addresses of the other family", env: map[string]string{"OPENSHIFT_HA_VIRTUAL_IPS": "fd00::1-3"}, args: []string{"--print-config", "--vrid-probe", "0", "--node-addresses", "198.18.0.11,198.18.0.12"},
			wantCode: 2, wantErr: "--node-addresses: 198.18.0.11 is IPv4 but the VIPs (OPENSHIFT_HA_VIRTUAL_IPS) are IPv6"},
		{name: "IPv6 VIPs refuse VRRPv2", env: map[string]string{"OPENSHIFT_HA_VIRTUAL_IPS": "fd00::1-3"}, args: []string{"--vrrp-version", "2"},
			wantCode: 2, wantErr: "--vrrp-version 2: the VIPs (OPENSHIFT_HA_VIRTUAL_IPS) are IPv6"},
		{name: "BGP by flags, bad value named by flag", env: map[string]string{"OPENSHIFT_HA_VIRTUAL_IPS": "198.18.0.100"},
			args:     []string{"--bgp-asn", "64512", "--bgp-peers", "198.18.0.1", "--bgp-hold-time", "ninety"},
			wantCode: 2, wantErr: `--bgp-hold-time="ninety": want whole seconds, 0 (90) or 3..65535`},
		{name: "keeping routes needs graceful restart", env: map[string]string{"OPENSHIFT_HA_VIRTUAL_IPS": "198.18.0.100"},
			args:     []string{"--bgp-asn", "64512", "--bgp-peers", "198.18.0.1", "--bgp-stop-keeps-routes"},
			wantCode: 2, wantErr: "--bgp-stop-keeps-routes needs BGP with graceful restart (OPENSHIFT_HA_BGP_ASN and OPENSHIFT_HA_BGP_GRACEFUL_RESTART)"},
		{name: "no keepalived.conf with BGP", env: map[string]string{"OPENSHIFT_HA_VIRTUAL_IPS": "198.18.0.100", "OPENSHIFT_HA_MONITOR_PORT": "0"},
			args:     []string{"--bgp-asn", "64512", "--bgp-peers", "198.18.0.1", "--print-config"},
			wantCode: 1, wantErr: "the pool is announced by BGP (OPENSHIFT_HA_BGP_ASN is set): no VRRP runs, so there is no keepalived.conf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if runtime.GOOS != "linux" && tc.wantCode == 0 {
				t.Skip("needs Linux")
			}
			for _, k := range []string{"OPENSHIFT_HA_VIRTUAL_IPS", "OPENSHIFT_HA_MONITOR_PORT", "OPENSHIFT_HA_NETWORK_INTERFACE", "OPENSHIFT_HA_REPLICA_COUNT", "OPENSHIFT_HA_WATCH_PORT"} {
				t.Setenv(k, "") // restored after the test
				os.Unsetenv(k)
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var out, errb bytes.Buffer
			code := runIPFailover(context.Background(), tc.args, &out, &errb)
			if code != tc.wantCode || !strings.Contains(out.String(), tc.wantOut) || !strings.Contains(errb.String(), tc.wantErr) {
				t.Fatalf("runIPFailover(%q) = %d\nstdout: %s\nstderr: %s\nwant code %d, stdout containing %q, stderr containing %q",
					tc.args, code, out.String(), errb.String(), tc.wantCode, tc.wantOut, tc.wantErr)
			}
		})
	}
}

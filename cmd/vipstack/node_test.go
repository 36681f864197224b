package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNodeEndpointPorts checks that `vipstack node --check` refuses
// --metrics-addr and --status-addr ports that a service of the cluster
// file binds, names the flag, the port and the service, and accepts free
// ones.
func TestNodeEndpointPorts(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cluster.yaml")
	const cluster = `name: c1
baseDomain: example.com
apiVIPs: [198.18.0.5]
ingressVIPs: [198.18.0.7]
machineNetworks: [198.18.0.0/24]
ports: {lb: 7445}
nodes:
  - {name: m0, role: master, ips: [198.18.0.11]}
`
	if err := os.WriteFile(file, []byte(cluster), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{name: "defaults", wantCode: 0},
		{name: "free ports", args: []string{"--metrics-addr", "127.0.0.1:19650", "--status-addr", "127.0.0.1:19651"}, wantCode: 0},
		{name: "any free port", args: []string{"--metrics-addr", "127.0.0.1:0"}, wantCode: 0},
		{name: "off", args: []string{"--metrics-addr", "", "--status-addr", ""}, wantCode: 0},
		{name: "metrics on the LB frontend", args: []string{"--metrics-addr", "0.0.0.0:7445"}, wantCode: 1,
			wantErr: "cluster.yaml: vipstack node's --metrics-addr 0.0.0.0:7445: port 7445 is also the port of ports.lb; every service of a node needs its own port (accepted: 1..65535 except 53, 1936, 6443, 7445, 9651, 18080, 22623, 50000, 50936)"},
		{name: "status on the DNS", args: []string{"--status-addr", "127.0.0.1:53"}, wantCode: 1,
			wantErr: "vipstack node's --status-addr 127.0.0.1:53: port 53 is also the port of the cluster DNS (UDP and TCP)"},
		{name: "both on one port", args: []string{"--metrics-addr", "127.0.0.1:19650", "--status-addr", "127.0.0.1:19650"}, wantCode: 1,
			wantErr: "vipstack node's --status-addr 127.0.0.1:19650: port 19650 is also the port of vipstack node's --metrics-addr 127.0.0.1:19650"},
		{name: "no port", args: []string{"--metrics-addr", "127.0.0.1"}, wantCode: 2,
			wantErr: `--metrics-addr "127.0.0.1": want HOST:PORT with a port 0..65535`},
		{name: "port out of range", args: []string{"--status-addr", "127.0.0.1:70000"}, wantCode: 2,
			wantErr: `--status-addr "127.0.0.1:70000": want HOST:PORT with a port 0..65535`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"node", "--check", "--config", file, "--node", "m0"}, tc.args...)
			code := run(args, &out, &errb)
			if code != tc.wantCode || !strings.Contains(errb.String(), tc.wantErr) {
				t.Fatalf("run(%q) = %d\nstdout: %s\nstderr: %s\nwant code %d, stderr containing %q", args, code, out.String(), errb.String(), tc.wantCode, tc.wantErr)
			}
			if tc.wantCode == 0 && !strings.Contains(out.String(), "valid for node m0") {
				t.Fatalf("stdout %q: want the file reported valid", out.String())
			}
		})
	}
}

package node

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReloadStatusPortChange: a cluster file that changes ports.status is
// refused on reload, naming the field (the node serves its status to the
// cluster on the port it started with, and the cluster view asks the
// file's); the file in force keeps its port.
func TestReloadStatusPortChange(t *testing.T) {
	file := func(ports string) string {
		return `name: c1
baseDomain: example.com
apiVIPs: [198.18.0.5]
ingressVIPs: [198.18.0.7]
machineNetworks: [198.18.0.0/24]
vrrp: {interface: lo}
` + ports + `nodes:
  - {name: master-0, role: master, ips: [198.18.0.11]}
`
	}
	for _, tc := range []struct {
		name, from, to string
		wantErr        string // "" for accepted
	}{
		{name: "unchanged", from: "ports: {status: 9652}\n", to: "ports: {status: 9652}\n"},
		{name: "set", from: "", to: "ports: {status: 9652}\n", wantErr: "ports.status: 0 to 9652: "},
		{name: "moved", from: "ports: {status: 9652}\n", to: "ports: {status: 9657}\n", wantErr: "ports.status: 9652 to 9657: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cluster.yaml")
			if err := os.WriteFile(path, []byte(file(tc.from)), 0o644); err != nil {
				t.Fatal(err)
			}
			a, err := New(Options{ClusterPath: path, Node: "master-0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if a.iface, err = resolveInterface(a.cluster); err != nil {
				t.Fatal(err)
			}
			close(a.ready)
			before := a.Cluster().Ports.Status
			if err := os.WriteFile(path, []byte(file(tc.to)), 0o644); err != nil {
				t.Fatal(err)
			}
			err = a.Reload()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Reload: %v, want accepted", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Reload: %v, want an error with %q", err, tc.wantErr)
			}
			if got := a.Cluster().Ports.Status; got != before {
				t.Errorf("ports.status in force %d after a refused reload, want %d", got, before)
			}
		})
	}
}

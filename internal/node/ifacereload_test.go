package node

import (
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReloadInterfaceChange checks that a cluster file that moves the VRRP
// instances to another interface (vrrp.interface, or machineNetworks that
// resolve to another one) is refused on reload and named, instead of being
// reported as applied while every instance stays on the old interface
// (the engine is given the interface resolved at start). The instances
// would otherwise keep advertising where the operator asked them not to,
// and `vipstack status` would say the file was applied.
func TestReloadInterfaceChange(t *testing.T) {
	other := ""
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ifi := range ifs {
		if ifi.Name != "lo" {
			other = ifi.Name
			break
		}
	}
	file := func(iface string) string {
		return `name: c1
baseDomain: example.com
apiVIPs: [198.18.0.5]
ingressVIPs: [198.18.0.7]
machineNetworks: [198.18.0.0/24]
vrrp: {interface: ` + iface + `}
nodes:
  - {name: master-0, role: master, ips: [198.18.0.11]}
`
	}
	for _, tc := range []struct {
		name, iface string
		wantErr     string // "" for accepted
	}{
		{name: "same interface", iface: "lo"},
		{name: "an interface that does not exist", iface: "vsaenone0", wantErr: `vrrp.interface "vsaenone0"`},
		{name: "another interface", iface: other, wantErr: "vrrp.interface: lo to " + other + ": the VRRP instances run on lo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.iface == "" {
				t.Skip("no interface besides lo")
			}
			path := filepath.Join(t.TempDir(), "cluster.yaml")
			if err := os.WriteFile(path, []byte(file("lo")), 0o644); err != nil {
				t.Fatal(err)
			}
			a, err := New(Options{ClusterPath: path, Node: "master-0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			// What Run does before a reload may go ahead (no services:
			// only the cluster file's acceptance is under test).
			if a.iface, err = resolveInterface(a.cluster); err != nil {
				t.Fatal(err)
			}
			close(a.ready)
			if err := os.WriteFile(path, []byte(file(tc.iface)), 0o644); err != nil {
				t.Fatal(err)
			}
			err = a.Reload()
			st := a.Status()
			if tc.wantErr == "" {
				if err != nil || st.LoadError != "" {
					t.Fatalf("Reload: %v (status %q), want accepted", err, st.LoadError)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Reload: %v, want an error containing %q", err, tc.wantErr)
			}
			if !strings.Contains(st.LoadError, tc.wantErr) {
				t.Errorf("status: cluster_file_error %q, want it to contain %q", st.LoadError, tc.wantErr)
			}
			if got := a.cluster.VRRP.Interface; got != "lo" {
				t.Errorf("the cluster in force has vrrp.interface %q, want lo (the refused file changes nothing)", got)
			}
		})
	}
}

package netif

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestVMACLedger: the VMAC ledger writes and reads back its entries, and
// the virtual router MACs are RFC 5798's.
func TestVMACLedger(t *testing.T) {
	l := VMACLedgerOf(Ledger{Path: filepath.Join(t.TempDir(), "vips")})
	if got, err := l.Load(); err != nil || got != nil {
		t.Fatalf("missing ledger: %v, %v; want empty", got, err)
	}
	want := []VMAC{
		{Name: "vrrp.51", Parent: "eth0", MAC: VMACAddr(51, 4), Family: 4},
		{Name: "vm6", Parent: "bond0", MAC: VMACAddr(255, 6), Family: 6},
	}
	if err := l.Save(want); err != nil {
		t.Fatal(err)
	}
	got, err := l.Load()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		vrid uint8
		fam  int
		want string
	}{{51, 4, "00:00:5e:00:01:33"}, {1, 6, "00:00:5e:00:02:01"}, {255, 4, "00:00:5e:00:01:ff"}} {
		if got := VMACAddr(tc.vrid, tc.fam).String(); got != tc.want {
			t.Errorf("VMACAddr(%d, %d) = %s, want %s", tc.vrid, tc.fam, got, tc.want)
		}
	}
	for _, bad := range []string{"vrrp.1 eth0", "vrrp.1 eth0 zz 4", "vrrp.1 eth0 00:00:5e:00:01:01 5"} {
		if _, err := ParseVMAC(bad); err == nil {
			t.Errorf("ParseVMAC(%q) succeeded", bad)
		}
	}
}

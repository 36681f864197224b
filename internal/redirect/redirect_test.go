package redirect

import (
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from Render's output")

func TestRender(t *testing.T) {
	tests := []struct {
		name   string
		vip    string
		toPort uint16
		lease  time.Duration
	}{
		{name: "ipv4", vip: "198.18.0.100:6443", toPort: 9445, lease: DefaultLease},
		{name: "ipv6", vip: "[fd00:bb::100]:6443", toPort: 9445, lease: DefaultLease},
		{name: "ipv4_other_ports", vip: "10.0.0.5:443", toPort: 7443, lease: 45*time.Minute + 1500*time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Render(netip.MustParseAddrPort(tt.vip), tt.toPort, tt.lease)
			path := filepath.Join("testdata", "TestRender_"+tt.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("Render(%s, %d) mismatch (-want +got):\n%s", tt.vip, tt.toPort, diff)
			}
		})
	}
}

func TestTableName(t *testing.T) {
	tests := []struct {
		vip  string
		want string
	}{
		{vip: "198.18.0.5:6443", want: "vipstack_redirect_198_18_0_5_6443"},
		{vip: "[fd00:bb::5]:6443", want: "vipstack_redirect_fd00_bb__5_6443"},
		{vip: "[fd00:bb::5]:443", want: "vipstack_redirect_fd00_bb__5_443"},
	}
	for _, tt := range tests {
		t.Run(tt.vip, func(t *testing.T) {
			r := New(netip.MustParseAddrPort(tt.vip), 9445)
			if diff := cmp.Diff(tt.want, r.Table()); diff != "" {
				t.Errorf("Table() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		vip     netip.AddrPort
		toPort  uint16
		lease   time.Duration // 0: DefaultLease
		wantErr string        // substring; "" means valid
	}{
		{name: "ipv4", vip: netip.MustParseAddrPort("198.18.0.5:6443"), toPort: 9445},
		{name: "ipv6", vip: netip.MustParseAddrPort("[fd00::5]:6443"), toPort: 9445},
		{name: "zero", vip: netip.AddrPort{}, toPort: 9445, wantErr: "not an address"},
		{name: "mapped", vip: netip.MustParseAddrPort("[::ffff:198.18.0.5]:6443"), toPort: 9445, wantErr: "use 198.18.0.5"},
		{name: "zone", vip: netip.MustParseAddrPort("[fd00::5%eth0]:6443"), toPort: 9445, wantErr: "zone"},
		{name: "unspecified", vip: netip.MustParseAddrPort("0.0.0.0:6443"), toPort: 9445, wantErr: "unicast address"},
		{name: "loopback", vip: netip.MustParseAddrPort("[::1]:6443"), toPort: 9445, wantErr: "unicast address"},
		{name: "vip port 0", vip: netip.MustParseAddrPort("198.18.0.5:0"), toPort: 9445, wantErr: "port 0: want a port 1..65535"},
		{name: "frontend port 0", vip: netip.MustParseAddrPort("198.18.0.5:6443"), toPort: 0, wantErr: "to port 0: want a frontend port"},
		{name: "shortest lease", vip: netip.MustParseAddrPort("198.18.0.5:6443"), toPort: 9445, lease: MinLease},
		{name: "longest lease", vip: netip.MustParseAddrPort("198.18.0.5:6443"), toPort: 9445, lease: MaxLease},
		{name: "lease too short", vip: netip.MustParseAddrPort("198.18.0.5:6443"), toPort: 9445, lease: 99 * time.Millisecond,
			wantErr: "redirect of 198.18.0.5:6443: lease 99ms: want whole milliseconds from 100ms to 1h0m0s"},
		{name: "lease too long", vip: netip.MustParseAddrPort("198.18.0.5:6443"), toPort: 9445, lease: MaxLease + time.Millisecond, wantErr: "lease 1h0m0.001s: want"},
		{name: "lease below a millisecond", vip: netip.MustParseAddrPort("198.18.0.5:6443"), toPort: 9445, lease: time.Second + time.Microsecond, wantErr: "lease 1.000001s: want whole milliseconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lease := tt.lease
			if lease == 0 {
				lease = DefaultLease
			}
			err := NewLeased(tt.vip, tt.toPort, lease).validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if tt.wantErr == "" && err != nil {
				t.Fatalf("validate() = %v, want nil", err)
			}
			if tt.wantErr != "" && !strings.Contains(got, tt.wantErr) {
				t.Fatalf("validate() = %q, want an error containing %q", got, tt.wantErr)
			}
		})
	}
}

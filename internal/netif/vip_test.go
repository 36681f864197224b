package netif

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestVIPValidate(t *testing.T) {
	p4 := netip.MustParsePrefix("198.18.0.100/32")
	p6 := netip.MustParsePrefix("fd00:bb::100/128")
	tests := []struct {
		name    string
		vip     VIP
		wantErr string // substring; "" = valid
	}{
		{name: "ipv4 minimal", vip: VIP{Prefix: p4, Dev: "eth0"}},
		{name: "ipv4 full", vip: VIP{Prefix: netip.MustParsePrefix("198.18.0.100/24"), Dev: "eth0", Label: "eth0:vip",
			Scope: "link", Broadcast: netip.MustParseAddr("198.18.0.255"), NoPrefixRoute: true}},
		{name: "ipv6", vip: VIP{Prefix: p6, Dev: "eth0", Scope: "global", Preferred: true}},
		{name: "no prefix", vip: VIP{Dev: "eth0"}, wantErr: "VIP.Prefix"},
		{name: "no dev", vip: VIP{Prefix: p4}, wantErr: "VIP.Dev is empty"},
		{name: "dev too long", vip: VIP{Prefix: p4, Dev: "abcdefghijklmnop"}, wantErr: "at most 15"},
		{name: "dev with slash", vip: VIP{Prefix: p4, Dev: "eth/0"}, wantErr: "whitespace or '/'"},
		{name: "label not starting with dev (OpenShift's label vip)", vip: VIP{Prefix: p4, Dev: "eth0", Label: "vip"}},
		{name: "label on ipv6", vip: VIP{Prefix: p6, Dev: "eth0", Label: "eth0:v"}, wantErr: "IPv4 addresses only"},
		{name: "bad scope", vip: VIP{Prefix: p4, Dev: "eth0", Scope: "universe"}, wantErr: `VIP.Scope "universe": want global, site, link, host or nowhere`},
		{name: "broadcast on ipv6", vip: VIP{Prefix: p6, Dev: "eth0", Broadcast: netip.MustParseAddr("198.18.0.255")}, wantErr: "IPv4 only"},
		{name: "multicast", vip: VIP{Prefix: netip.MustParsePrefix("224.0.0.18/32"), Dev: "eth0"}, wantErr: "multicast"},
		{name: "mapped", vip: VIP{Prefix: netip.MustParsePrefix("::ffff:198.18.0.1/128"), Dev: "eth0"}, wantErr: "IPv4-mapped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.vip.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestVIPStringParse(t *testing.T) {
	tests := []struct {
		name string
		vip  VIP
		line string
	}{
		{name: "minimal", vip: VIP{Prefix: netip.MustParsePrefix("198.18.0.100/32"), Dev: "eth0"},
			line: "198.18.0.100/32 dev eth0"},
		{name: "label", vip: VIP{Prefix: netip.MustParsePrefix("198.18.0.100/32"), Dev: "eth0", Label: "eth0:vip"},
			line: "198.18.0.100/32 dev eth0 label eth0:vip"},
		{name: "everything v4", vip: VIP{Prefix: netip.MustParsePrefix("198.18.0.100/24"), Dev: "br-lan", Label: "br-lan:1",
			Scope: "host", Broadcast: netip.MustParseAddr("198.18.0.255"), NoPrefixRoute: true},
			line: "198.18.0.100/24 dev br-lan label br-lan:1 scope host broadcast 198.18.0.255 noprefixroute"},
		{name: "v6 preferred", vip: VIP{Prefix: netip.MustParsePrefix("fd00:bb::100/128"), Dev: "eth0", Preferred: true},
			line: "fd00:bb::100/128 dev eth0 preferred"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.line, tt.vip.String()); diff != "" {
				t.Errorf("String() (-want +got):\n%s", diff)
			}
			if got := string(tt.vip.Append([]byte("x "))); got != "x "+tt.line {
				t.Errorf("Append(\"x \") = %q, want %q", got, "x "+tt.line)
			}
			got, err := ParseVIP(tt.line)
			if err != nil {
				t.Fatalf("ParseVIP(%q): %v", tt.line, err)
			}
			if diff := cmp.Diff(tt.vip, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
				cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
				t.Errorf("ParseVIP (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseVIPErrors(t *testing.T) {
	tests := []struct {
		line    string
		wantErr string
	}{
		{line: "", wantErr: "empty VIP"},
		{line: "198.18.0.100 dev eth0", wantErr: `address "198.18.0.100": want address/length`},
		{line: "198.18.0.100/32", wantErr: "VIP.Dev is empty"},
		{line: "198.18.0.100/32 dev", wantErr: `"dev" needs a value`},
		{line: "198.18.0.100/32 dev eth0 colour red", wantErr: `unknown word "colour"`},
		{line: "198.18.0.100/32 dev eth0 dev eth1", wantErr: `word "dev" given twice`},
		{line: "198.18.0.100/32 dev eth0 broadcast x", wantErr: `broadcast "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			_, err := ParseVIP(tt.line)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseVIP(%q) = %v, want error containing %q", tt.line, err, tt.wantErr)
			}
		})
	}
}

// FuzzParseVIP checks that whatever ParseVIP accepts formats back to a line
// that parses to the same VIP.
func FuzzParseVIP(f *testing.F) {
	for _, s := range []string{
		"198.18.0.100/32 dev eth0",
		"198.18.0.100/24 dev eth0 label eth0:x scope link broadcast 198.18.0.255 noprefixroute",
		"fd00::1/128 dev eth0 preferred",
		"1.2.3.4/33 dev e",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVIP(s)
		if err != nil {
			return
		}
		v2, err := ParseVIP(v.String())
		if err != nil {
			t.Fatalf("ParseVIP(%q) of String() of ParseVIP(%q): %v", v.String(), s, err)
		}
		if v != v2 {
			t.Fatalf("round trip of %q: %+v != %+v", s, v, v2)
		}
	})
}

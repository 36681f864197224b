package redirect

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/haproxycfg"
)

// TestPort: the redirect delivers to the node's own addresses, so
// only a wildcard bind of the VIP's family can take it; any other bind is
// refused at start with the binds and what is accepted.
func TestPort(t *testing.T) {
	conf := func(binds ...string) []byte {
		var b strings.Builder
		b.WriteString("defaults\n  mode tcp\nfrontend main\n")
		for _, bind := range binds {
			b.WriteString("  bind " + bind + "\n")
		}
		b.WriteString("  default_backend masters\nbackend masters\n  server m0 198.18.0.11:6443 check\n")
		return []byte(b.String())
	}
	v4 := netip.MustParseAddrPort("198.18.7.5:6443")
	v6 := netip.MustParseAddrPort("[fd00::5]:6443")
	tests := []struct {
		name    string
		binds   []string
		vip     netip.AddrPort
		want    uint16
		wantErr string
	}{
		{name: "seed dual-stack, IPv4 VIP", binds: []string{":::9445 v4v6"}, vip: v4, want: 9445},
		{name: "seed dual-stack, IPv6 VIP", binds: []string{":::9445 v4v6"}, vip: v6, want: 9445},
		{name: "port only", binds: []string{":7443"}, vip: v4, want: 7443},
		{name: "IPv4 wildcard", binds: []string{"0.0.0.0:7443"}, vip: v4, want: 7443},
		{name: "IPv6 wildcard for IPv6", binds: []string{":::7443"}, vip: v6, want: 7443},
		{name: "a wildcard after a specific address", binds: []string{"198.18.7.5:19445", "0.0.0.0:19446"}, vip: v4, want: 19446},
		{name: "the VIP's own address", binds: []string{"198.18.7.5:19445"}, vip: v4,
			wantErr: "no frontend listens on every local IPv4 address, where the redirect of 198.18.7.5:6443 delivers (to 127.0.0.1/::1 for local clients, to the receiving interface's address for others); binds: frontend main 198.18.7.5:19445 (t.cfg:4) (accepted: bind :PORT, 0.0.0.0:PORT or :::PORT v4v6)"},
		{name: "loopback only", binds: []string{"127.0.0.1:19445"}, vip: v4, wantErr: "binds: frontend main 127.0.0.1:19445 (t.cfg:4)"},
		{name: "IPv4 wildcard, IPv6 VIP", binds: []string{":7443"}, vip: v6, wantErr: "no frontend listens on every local IPv6 address, where the redirect of [fd00::5]:6443 delivers"},
		{name: "IPv4 wildcard, IPv6 VIP: accepted", binds: []string{":7443"}, vip: v6, wantErr: "(accepted: bind :::PORT)"},
	}
	// `bind :::PORT` alone takes IPv4 too unless net.ipv6.bindv6only is set.
	v6only := struct {
		name    string
		binds   []string
		vip     netip.AddrPort
		want    uint16
		wantErr string
	}{name: "IPv6 wildcard without v4v6, IPv4 VIP, bindv6only 0", binds: []string{":::7443"}, vip: v4, want: 7443}
	if V6OnlyDefault() {
		v6only.name, v6only.want, v6only.wantErr = "IPv6 wildcard without v4v6, IPv4 VIP, bindv6only 1", 0, "binds: frontend main [::]:7443 (t.cfg:4) (accepted: bind :PORT"
	}
	tests = append(tests, v6only)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := haproxycfg.Parse("t.cfg", conf(tt.binds...))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Port(cfg, tt.vip)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Port() = %d, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Port() = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

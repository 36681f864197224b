package peers

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFRRConfRender renders vrrpd configurations and has FRR's own parser
// (`vrrpd -C`, a dry run) read each; it runs as root (vrrpd drops to user
// frr) and skips without FRR. Bad fields are refused before FRR sees them.
func TestFRRConfRender(t *testing.T) {
	v4, v6 := netip.MustParseAddr("198.18.0.100"), netip.MustParseAddr("fd00:bb::100")
	good := []struct {
		name string
		conf FRRConf
		want []string // lines the text must hold
	}{
		{name: "v3 dual stack", conf: FRRConf{Version: 3, Interval: 500 * time.Millisecond, VRID: 51, Priority: 200,
			VIPs: []netip.Addr{v4, v6}},
			want: []string{"interface eth0", " vrrp 51 version 3", " vrrp 51 priority 200",
				" vrrp 51 advertisement-interval 500", " vrrp 51 ip 198.18.0.100", " vrrp 51 ipv6 fd00:bb::100"}},
		{name: "v2 no preempt", conf: FRRConf{Version: 2, Interval: 2 * time.Second, VRID: 7, Priority: 1,
			Interface: "veth1", VIPs: []netip.Addr{v4}, NoPreempt: true},
			want: []string{"interface veth1", " vrrp 7 version 2", " vrrp 7 advertisement-interval 2000",
				" no vrrp 7 preempt"}},
	}
	for _, tt := range good {
		t.Run(tt.name, func(t *testing.T) {
			text, err := tt.conf.Render()
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(text, "\n")
			for _, w := range tt.want {
				if !contains(lines, w) {
					t.Errorf("rendered text lacks %q:\n%s", w, text)
				}
			}
			dryRun(t, text)
		})
	}
	bad := []struct {
		name string
		conf FRRConf
		want string
	}{
		{name: "priority 255", conf: FRRConf{Version: 3, Interval: time.Second, VRID: 1, Priority: 255, VIPs: []netip.Addr{v4}}, want: "priority 255"},
		{name: "VRID 0", conf: FRRConf{Version: 3, Interval: time.Second, VRID: 0, Priority: 100, VIPs: []netip.Addr{v4}}, want: "VRID 0"},
		{name: "v2 half second", conf: FRRConf{Version: 2, Interval: 500 * time.Millisecond, VRID: 1, Priority: 100, VIPs: []netip.Addr{v4}}, want: "whole seconds"},
		{name: "v2 IPv6", conf: FRRConf{Version: 2, Interval: time.Second, VRID: 1, Priority: 100, VIPs: []netip.Addr{v6}}, want: "IPv4 only"},
		{name: "interval 5ms", conf: FRRConf{Version: 3, Interval: 5 * time.Millisecond, VRID: 1, Priority: 100, VIPs: []netip.Addr{v4}}, want: "10ms..40.95s"},
		{name: "no address", conf: FRRConf{Version: 3, Interval: time.Second, VRID: 1, Priority: 100}, want: "without addresses"},
		{name: "version 4", conf: FRRConf{Version: 4, Interval: time.Second, VRID: 1, Priority: 100, VIPs: []netip.Addr{v4}}, want: "version 4"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.conf.Render()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Render() error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func contains(lines []string, w string) bool {
	for _, l := range lines {
		if l == w {
			return true
		}
	}
	return false
}

// dryRun has vrrpd parse text. vrrpd -C exits 0 even on an unknown line;
// it says "No such command" (or "%" errors) in its log.
func dryRun(t *testing.T, text string) {
	t.Helper()
	bin := filepath.Join(FRRDir, "vrrpd")
	if _, err := os.Stat(bin); err != nil {
		t.Logf("FRR's vrrpd not installed, text not checked by FRR: %v", err)
		return
	}
	if os.Geteuid() != 0 {
		t.Log("not root: text not checked by FRR (vrrpd switches to user frr)")
		return
	}
	path := filepath.Join(t.TempDir(), "vrrpd.conf")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-C", "-f", path, "-u", "frr", "-g", "frr", "--log", "stdout").CombinedOutput()
	if err != nil {
		t.Fatalf("vrrpd -C: %v\n%s", err, out)
	}
	for _, bad := range []string{"No such command", "% ", "Unknown command", "rror"} {
		if strings.Contains(string(out), bad) {
			t.Errorf("vrrpd -C complains (%q):\n%s\ntext:\n%s", bad, out, text)
		}
	}
}

// TestFRRRouters renders several virtual routers for one vrrpd (the
// mixed chaos cluster's FRR nodes) and has vrrpd -C read the text; the
// macvlans follow each router's families. Routers on two interfaces, a
// VRID twice or none at all are refused.
func TestFRRRouters(t *testing.T) {
	v4, v4b, v6 := netip.MustParseAddr("198.18.0.100"), netip.MustParseAddr("198.18.0.101"), netip.MustParseAddr("fd00:bb::100")
	r := func(vrid, version int, vips ...netip.Addr) FRRConf {
		iv := 100 * time.Millisecond
		if version == 2 {
			iv = time.Second
		}
		return FRRConf{Version: version, Interval: iv, VRID: vrid, Priority: 100, VIPs: vips}
	}
	tests := []struct {
		name    string
		confs   []FRRConf
		want    []string // lines the text must hold
		links   []string
		wantErr string
	}{
		{name: "mixed cluster's three groups", confs: []FRRConf{r(51, 2, v4), r(52, 3, v4b), r(53, 3, v6)},
			want: []string{"log timestamp precision 3", " vrrp 51 version 2", " vrrp 51 advertisement-interval 1000",
				" vrrp 52 version 3", " vrrp 52 ip 198.18.0.101", " vrrp 53 ipv6 fd00:bb::100"},
			links: []string{"vrrp4-51", "vrrp4-52", "vrrp6-53"}},
		{name: "dual stack router", confs: []FRRConf{r(60, 3, v6, v4)}, want: []string{" vrrp 60 ip 198.18.0.100", " vrrp 60 ipv6 fd00:bb::100"},
			links: []string{"vrrp4-60", "vrrp6-60"}},
		{name: "none", wantErr: "without virtual routers"},
		{name: "two interfaces", confs: []FRRConf{r(51, 3, v4), {Version: 3, Interval: time.Second, VRID: 52, Priority: 100, Interface: "eth1", VIPs: []netip.Addr{v4b}}},
			wantErr: "want one interface"},
		{name: "VRID twice", confs: []FRRConf{r(51, 3, v4), r(51, 3, v6)}, wantErr: "VRID 51 twice"},
		{name: "bad router", confs: []FRRConf{r(51, 3, v4), r(52, 2, v6)}, wantErr: "IPv4 only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, err := RenderFRRRouters(tt.confs)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("RenderFRRRouters() error %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(text, "\n")
			for _, w := range tt.want {
				if !contains(lines, w) {
					t.Errorf("rendered text lacks %q:\n%s", w, text)
				}
			}
			n := &FRRNode{Confs: tt.confs}
			if got := n.Links(); !slices.Equal(got, tt.links) {
				t.Errorf("Links() = %q, want %q", got, tt.links)
			}
			dryRun(t, text)
		})
	}
}

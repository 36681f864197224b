package ipfailover

import (
	"flag"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/vipstack/vipstack/internal/keepalived"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// sameModel compares a generated model with the one the reader makes of
// its text: positions, notes and comments aside, and the native probe.
var sameModel = cmp.Options{
	cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
	cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
	cmpopts.IgnoreTypes(keepalived.Pos{}),
	// A VIP compares whole (VIP.Equal); its position is ignored here too.
	cmp.Comparer(keepalived.VIP.SameEntry),
	cmpopts.IgnoreFields(keepalived.Config{}, "Warnings", "Files", "Comment"),
	cmpopts.IgnoreFields(keepalived.Script{}, "Probe"),
}

func golden(t *testing.T, got string) {
	t.Helper()
	path := filepath.Join("testdata", strings.ReplaceAll(t.Name(), "/", "_")+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}

func parseSpec(t *testing.T, env map[string]string) *Spec {
	t.Helper()
	s, err := Parse(Input{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRender(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		node Node
	}{
		{
			name: "multicast_port_check",
			env:  map[string]string{EnvVirtualIPs: "198.18.16.1-25", EnvReplicaCount: "3", EnvMonitorPort: "8080"},
			node: Node{Interface: "eth0", Address: netip.MustParseAddr("198.18.0.12"), Rank: 1, Version: 2, AdvertInterval: time.Second, CheckPassed: true},
		},
		{
			name: "unicast_v3_scripts_check_failing",
			env: map[string]string{EnvVirtualIPs: "198.18.16.1-4", EnvUnicastPeers: "198.18.0.11,198.18.0.12,198.18.0.13",
				EnvCheckScript: "/bin/true", EnvNotifyScript: "/bin/true notify", EnvCheckInterval: "1",
				EnvPreemption: "preempt", EnvVIPGroups: "3"},
			node: Node{Interface: "eth0", Address: netip.MustParseAddr("198.18.0.11"), Rank: 0, Version: 3, AdvertInterval: 100 * time.Millisecond},
		},
		{
			name: "ipv6_nopreempt_no_check",
			env:  map[string]string{EnvVirtualIPs: "fd00:bb::100-102", EnvMonitorPort: "0", EnvPreemption: "nopreempt", EnvReplicaCount: "2"},
			node: Node{Interface: "eth0", Address: netip.MustParseAddr("fd00:bb::11"), Rank: 1, Version: 3, AdvertInterval: time.Second, CheckPassed: true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := parseSpec(t, tc.env)
			p := NewPlan(s, max(3, s.ReplicaCount))
			if _, err := AssignVRIDs(p, s, nil, nil); err != nil {
				t.Fatal(err)
			}
			text := p.Render(s, tc.node)
			golden(t, text)
			// The engine runs what the keepalived.conf reader makes of it.
			probe := PortCheck{Target: MonitorTarget(s, tc.node)}
			cfg, err := p.Keepalived(s, tc.node, probe, "test")
			if err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
			// ... and keepalived runs the text: both read the same.
			parsed, err := keepalived.Parse("test", []byte(text), nil)
			if err != nil {
				t.Fatalf("the reader rejects the text: %v\n%s", err, text)
			}
			if diff := cmp.Diff(parsed, cfg, sameModel); diff != "" {
				t.Errorf("the engine's model differs from the text's (-text +model):\n%s", diff)
			}
			if len(cfg.Instances) != len(p.Groups) {
				t.Fatalf("%d instances, want %d", len(cfg.Instances), len(p.Groups))
			}
			for i, in := range cfg.Instances {
				g := p.Groups[i]
				held := len(in.VIPs) + len(in.ExcludedVIPs)
				if in.Name != g.Name || in.VRID != g.VRID || in.Priority != g.Priority(tc.node.Rank) || held != len(g.VIPs) {
					t.Errorf("instance %s vrid %d prio %d holding %d, want %s vrid %d prio %d holding %d",
						in.Name, in.VRID, in.Priority, held, g.Name, g.VRID, g.Priority(tc.node.Rank), len(g.VIPs))
				}
			}
			if sc := cfg.Scripts[CheckName(s)]; sc != nil && s.CheckScript == "" && sc.Probe != probe {
				t.Errorf("the port check runs %v, want the native probe %v", sc.Probe, probe)
			}
			keepalivedAccepts(t, text)
		})
	}
}

// TestRenderLargePool: 10,000 VIPs in 6 groups read back by the reader.
func TestRenderLargePool(t *testing.T) {
	s := parseSpec(t, map[string]string{EnvVirtualIPs: "198.18.16.0-198.18.55.15", EnvReplicaCount: "3"})
	if len(s.VIPs) != 10000 {
		t.Fatalf("%d VIPs, want 10000", len(s.VIPs))
	}
	p := NewPlan(s, 3)
	if _, err := AssignVRIDs(p, s, nil, nil); err != nil {
		t.Fatal(err)
	}
	node := Node{Interface: "eth0", Address: netip.MustParseAddr("198.18.0.11"), Version: 2, AdvertInterval: time.Second, CheckPassed: true}
	cfg, err := p.Keepalived(s, node, nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, in := range cfg.Instances {
		if len(in.VIPs) != MaxAdvertised {
			t.Errorf("%s advertises %d VIPs, want %d", in.Name, len(in.VIPs), MaxAdvertised)
		}
		total += len(in.VIPs) + len(in.ExcludedVIPs)
		// The engine keeps these lists for its whole life: no room to
		// grow (a quarter more at this size with append's).
		if cap(in.VIPs) != len(in.VIPs) || cap(in.ExcludedVIPs) != len(in.ExcludedVIPs) {
			t.Errorf("%s: VIP lists of capacity %d and %d for %d and %d VIPs", in.Name, cap(in.VIPs), cap(in.ExcludedVIPs), len(in.VIPs), len(in.ExcludedVIPs))
		}
	}
	if total != 10000 || len(cfg.Instances) != 6 {
		t.Errorf("%d instances holding %d VIPs, want 6 holding 10000", len(cfg.Instances), total)
	}
}

func TestOriginConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		addr string
	}{
		{name: "one_instance_per_vip", env: map[string]string{EnvVirtualIPs: "10.1.1.1-4", EnvReplicaCount: "2", EnvMonitorPort: "30060"}, addr: "10.0.0.12"},
		{name: "vip_groups_excluded_unicast", env: map[string]string{EnvVirtualIPs: "10.1.1.1-7", EnvVIPGroups: "3", EnvReplicaCount: "3",
			EnvExcludedVRIDsImage: "12", EnvUnicastPeers: "10.0.0.11,10.0.0.12,10.0.0.13", EnvNotifyScript: "/bin/true",
			EnvMonitorPort: "0", EnvConfigName: "ipf-1"}, addr: "10.0.0.11"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := parseSpec(t, tc.env)
			text, err := OriginConfig(s, netip.MustParseAddr(tc.addr), "eth0", func(n int) int { return n - 1 })
			if err != nil {
				t.Fatal(err)
			}
			golden(t, text)
			keepalivedAccepts(t, text)
		})
	}
	t.Run("the 255 wall", func(t *testing.T) {
		s := parseSpec(t, map[string]string{EnvVirtualIPs: "10.1.1.1-10.1.2.44"})
		_, err := OriginConfig(s, netip.MustParseAddr("10.0.0.11"), "eth0", func(n int) int { return 0 })
		if err == nil || !strings.Contains(err.Error(), "group 246 needs VRID 256") {
			t.Fatalf("OriginConfig with 300 VIPs: %v, want the 255-VRID wall", err)
		}
	})
}

// keepalivedAccepts runs `keepalived -t` (configuration test) on text when
// keepalived is installed: what vipstack renders must run in keepalived too.
func keepalivedAccepts(t *testing.T, text string) {
	t.Helper()
	bin, err := exec.LookPath("keepalived")
	if err != nil {
		t.Log("keepalived not installed: configuration not cross-checked")
		return
	}
	path := filepath.Join(t.TempDir(), "keepalived.conf")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-t", "-l", "-n", "-f", path).CombinedOutput()
	// Exit status 6 only says scripts run without enable_script_security,
	// as the image's configurations do.
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 6 {
		err = nil
	}
	if err != nil {
		t.Errorf("keepalived -t rejects the configuration: %v\n%s", err, out)
	}
}

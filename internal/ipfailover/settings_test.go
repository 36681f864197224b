package ipfailover

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

// imageDefaults is the Spec the image's defaults give for VIPs 10.1.1.1-3.
func imageDefaults() *Spec {
	return &Spec{
		ConfigName:    "OpenShift-IPFailover",
		VIPs:          addrs("10.1.1.1", "10.1.1.2", "10.1.1.3"),
		MonitorPort:   80,
		ReplicaCount:  1,
		VRIDOffset:    10,
		CheckInterval: 2 * time.Second,
		Preempt:       true,
		PreemptDelay:  300 * time.Second,
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   map[string]string
		flags map[string]string
		want  func(s *Spec)
	}{
		{
			name: "image defaults",
			env:  map[string]string{EnvVirtualIPs: "10.1.1.1-3"},
			want: func(s *Spec) { s.ScriptEnv = []string{"OPENSHIFT_HA_VIRTUAL_IPS=10.1.1.1-3"} },
		},
		{
			name: "empty values are unset, as ${VAR:-default}",
			env:  map[string]string{EnvVirtualIPs: "10.1.1.1-3", EnvMonitorPort: "", EnvVRIDOffset: "", EnvPreemption: ""},
			want: func(s *Spec) { s.ScriptEnv = []string{"OPENSHIFT_HA_VIRTUAL_IPS=10.1.1.1-3"} },
		},
		{
			name: "pod spec from the OpenShift documentation",
			env: map[string]string{
				EnvConfigName: "ipfailover", EnvVirtualIPs: "1.1.1.1-2", EnvVIPGroups: "10", EnvInterface: "ens3",
				EnvMonitorPort: "30060", EnvVRIDOffset: "10", EnvReplicaCount: "2", EnvUseUnicast: "false",
				EnvIptablesChain: "INPUT", EnvCheckScript: "/etc/keepalive/mycheckscript.sh",
				EnvPreemption: "preempt_delay 300", EnvCheckInterval: "2",
			},
			want: func(s *Spec) {
				s.ConfigName, s.VIPs, s.VIPGroups, s.Interface = "ipfailover", addrs("1.1.1.1", "1.1.1.2"), 2, "ens3"
				s.MonitorPort, s.OffsetFixed, s.ReplicaCount, s.IptablesChain = 30060, true, 2, "INPUT"
				s.CheckScript, s.Check = "/etc/keepalive/mycheckscript.sh", []string{"/etc/keepalive/mycheckscript.sh"}
				s.Warnings = []string{"OPENSHIFT_HA_VIP_GROUPS=10: more groups than the 2 VIPs; using 2 (one VIP each)"}
				s.ScriptEnv = []string{"OPENSHIFT_HA_CONFIG_NAME=ipfailover", "OPENSHIFT_HA_VIRTUAL_IPS=1.1.1.1-2", "OPENSHIFT_HA_VIP_GROUPS=10",
					"OPENSHIFT_HA_NETWORK_INTERFACE=ens3", "OPENSHIFT_HA_MONITOR_PORT=30060", "OPENSHIFT_HA_REPLICA_COUNT=2",
					"OPENSHIFT_HA_VRRP_ID_OFFSET=10", "OPENSHIFT_HA_USE_UNICAST=false", "OPENSHIFT_HA_IPTABLES_CHAIN=INPUT",
					"OPENSHIFT_HA_CHECK_SCRIPT=/etc/keepalive/mycheckscript.sh", "OPENSHIFT_HA_CHECK_INTERVAL=2", "OPENSHIFT_HA_PREEMPTION=preempt_delay 300"}
			},
		},
		{
			name: "unicast, nopreempt, excluded VRIDs under both names, fractional interval",
			env: map[string]string{
				EnvVirtualIPs: "10.1.1.1-3", EnvUseUnicast: "true", EnvUnicastPeers: "10.0.0.12, 10.0.0.11,10.0.0.13",
				EnvPreemption: "nopreempt", EnvExcludedVRIDs: "12,15", EnvExcludedVRIDsImage: "9 12", EnvCheckInterval: "0.5",
				EnvMonitorPort: "0", EnvNotifyScript: "/bin/notify.sh --verbose",
			},
			want: func(s *Spec) {
				s.Peers = addrs("10.0.0.12", "10.0.0.11", "10.0.0.13")
				s.Preempt, s.PreemptDelay = false, 0
				s.ExcludedVRIDs = []int{9, 12, 15}
				s.CheckInterval, s.MonitorPort = 500*time.Millisecond, 0
				s.NotifyScript = "/bin/notify.sh --verbose"
				s.ScriptEnv = []string{"OPENSHIFT_HA_VIRTUAL_IPS=10.1.1.1-3", "OPENSHIFT_HA_MONITOR_PORT=0", "OPENSHIFT_HA_USE_UNICAST=true",
					"OPENSHIFT_HA_UNICAST_PEERS=10.0.0.12, 10.0.0.11,10.0.0.13", "OPENSHIFT_HA_NOTIFY_SCRIPT=/bin/notify.sh --verbose",
					"OPENSHIFT_HA_CHECK_INTERVAL=0.5", "OPENSHIFT_HA_PREEMPTION=nopreempt", "OPENSHIFT_HA_EXCLUDED_VRRP_IDS=12,15", "HA_EXCLUDED_VRRP_IDS=9 12"}
			},
		},
		{
			name:  "flags win over the environment; the offset given by flag is fixed",
			env:   map[string]string{EnvVirtualIPs: "10.9.9.9", EnvMonitorPort: "8080"},
			flags: map[string]string{EnvVirtualIPs: "10.1.1.1-3", EnvMonitorPort: "443", EnvVRIDOffset: "40", EnvConfigName: "pool-a"},
			want: func(s *Spec) {
				s.MonitorPort, s.VRIDOffset, s.OffsetFixed, s.ConfigName = 443, 40, true, "pool-a"
				// Scripts see the values in force: the flags'.
				s.ScriptEnv = []string{"OPENSHIFT_HA_CONFIG_NAME=pool-a", "OPENSHIFT_HA_VIRTUAL_IPS=10.1.1.1-3", "OPENSHIFT_HA_MONITOR_PORT=443", "OPENSHIFT_HA_VRRP_ID_OFFSET=40"}
			},
		},
		{
			// A value read from a ConfigMap file (env valueFrom
			// configMapKeyRef, created with --from-file) ends with a
			// newline. The image's bash reads these numbers with
			// [[ $v -gt 0 ]] or pastes them into keepalived.conf, where the
			// whitespace does not matter; OPENSHIFT_HA_MONITOR_PORT already
			// was trimmed here.
			name: "numbers and booleans with surrounding whitespace",
			env: map[string]string{EnvVirtualIPs: "10.1.1.1-3\n", EnvVIPGroups: "2\n", EnvCheckInterval: " 0.5\n",
				EnvUseUnicast: "false\n", EnvMonitorPort: "8080\n", EnvExcludedVRIDsImage: "9 12\r\n", EnvUnicastPeers: "10.0.0.11,10.0.0.12\n"},
			want: func(s *Spec) {
				s.VIPGroups, s.CheckInterval, s.MonitorPort = 2, 500*time.Millisecond, 8080
				s.ExcludedVRIDs, s.Peers = []int{9, 12}, addrs("10.0.0.11", "10.0.0.12")
				s.ScriptEnv = []string{"OPENSHIFT_HA_VIRTUAL_IPS=10.1.1.1-3\n", "OPENSHIFT_HA_VIP_GROUPS=2\n", "OPENSHIFT_HA_MONITOR_PORT=8080\n",
					"OPENSHIFT_HA_USE_UNICAST=false\n", "OPENSHIFT_HA_UNICAST_PEERS=10.0.0.11,10.0.0.12\n", "OPENSHIFT_HA_CHECK_INTERVAL= 0.5\n",
					"HA_EXCLUDED_VRRP_IDS=9 12\r\n"}
			},
		},
		{
			// The image's own e2e template (openshift/images
			// ipfailover/keepalived/tests/e2e/testdata/router/ipfailover.yaml)
			// sets OPENSHIFT_HA_NFTABLES_RULE: "INPUT"; its settings.sh reads
			// only whether it is set, and then adds the rule in a table of its
			// own (inet keepalived), whatever the value.
			name: "OPENSHIFT_HA_NFTABLES_RULE of the current image: a table of our own",
			env:  map[string]string{EnvVirtualIPs: "10.1.1.1-3", EnvNftablesRule: "INPUT"},
			want: func(s *Spec) {
				s.ScriptEnv = []string{"OPENSHIFT_HA_VIRTUAL_IPS=10.1.1.1-3", "OPENSHIFT_HA_NFTABLES_RULE=INPUT"}
			},
		},
		{
			// settings.sh: HA_MULTICAST_ACCEPT="${OPENSHIFT_HA_NFTABLES_RULE:-${OPENSHIFT_HA_IPTABLES_CHAIN:-""}}":
			// with both set the chain name plays no part (and is not checked).
			name: "OPENSHIFT_HA_NFTABLES_RULE with OPENSHIFT_HA_IPTABLES_CHAIN: the chain is ignored, with a warning",
			env:  map[string]string{EnvVirtualIPs: "10.1.1.1-3", EnvNftablesRule: "yes", EnvIptablesChain: "IN PUT"},
			want: func(s *Spec) {
				s.Warnings = []string{`OPENSHIFT_HA_IPTABLES_CHAIN="IN PUT" is ignored: OPENSHIFT_HA_NFTABLES_RULE is set, so the rule goes in the pool's own table (inet vipstack_ipfailover_OpenShift_IPFailover), as the image then puts it in its own (inet keepalived)`}
				s.ScriptEnv = []string{"OPENSHIFT_HA_VIRTUAL_IPS=10.1.1.1-3", "OPENSHIFT_HA_IPTABLES_CHAIN=IN PUT", "OPENSHIFT_HA_NFTABLES_RULE=yes"}
			},
		},
		{
			name: "ignored variables are warnings",
			env:  map[string]string{EnvVirtualIPs: "10.1.1.1-3", "OPENSHIFT_HA_SELECTOR": "ipfailover=yes"},
			want: func(s *Spec) {
				s.Warnings = []string{"OPENSHIFT_HA_SELECTOR is accepted but has no effect here: node selector of `oc adm ipfailover`; no effect on the node"}
				s.ScriptEnv = []string{"OPENSHIFT_HA_VIRTUAL_IPS=10.1.1.1-3", "OPENSHIFT_HA_SELECTOR=ipfailover=yes"}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(Input{Env: tc.env, Flags: tc.flags})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := imageDefaults()
			tc.want(want)
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(Spec{}), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		env       map[string]string
		flags     map[string]string
		flagNames bool
		want      []string // substrings of the error
	}{
		{name: "VIPs required", env: map[string]string{}, want: []string{"OPENSHIFT_HA_VIRTUAL_IPS is required"}},
		{name: "unknown variable", env: map[string]string{EnvVirtualIPs: "10.1.1.1", "OPENSHIFT_HA_VIRTUAL_IP": "10.1.1.2"},
			want: []string{`OPENSHIFT_HA_VIRTUAL_IP="10.1.1.2": unknown variable`}},
		{name: "bad port", env: map[string]string{EnvVirtualIPs: "10.1.1.1", EnvMonitorPort: "http"},
			want: []string{`OPENSHIFT_HA_MONITOR_PORT="http": want a TCP port number from 0 (no check) to 65535`}},
		{name: "bad port by flag is named by flag", env: map[string]string{EnvVirtualIPs: "10.1.1.1"}, flags: map[string]string{EnvMonitorPort: "70000"},
			want: []string{`--watch-port="70000": want a TCP port`}},
		{name: "offset out of range", env: map[string]string{EnvVirtualIPs: "10.1.1.1", EnvVRIDOffset: "255"},
			want: []string{`OPENSHIFT_HA_VRRP_ID_OFFSET="255": want a VRID offset from 0 to 254`}},
		{name: "unicast without peers", env: map[string]string{EnvVirtualIPs: "10.1.1.1", EnvUseUnicast: "true"},
			want: []string{"OPENSHIFT_HA_USE_UNICAST=true needs OPENSHIFT_HA_UNICAST_PEERS"}},
		{name: "use unicast not a bool", env: map[string]string{EnvVirtualIPs: "10.1.1.1", EnvUseUnicast: `"true"`},
			want: []string{`OPENSHIFT_HA_USE_UNICAST="\"true\"": want true or false`}},
		{name: "bad peer", env: map[string]string{EnvVirtualIPs: "10.1.1.1", EnvUnicastPeers: "10.0.0.1,node2"},
			want: []string{`OPENSHIFT_HA_UNICAST_PEERS="10.0.0.1,node2": "node2" is not a unicast IPv4 or IPv6 address`}},
		{name: "peer of the wrong family", env: map[string]string{EnvVirtualIPs: "10.1.1.1", EnvUnicastPeers: "fd00::1"},
			want: []string{"OPENSHIFT_HA_UNICAST_PEERS: peer fd00::1 is not of the VIPs' address family (IPv4)"}},
		{name: "preemption typo from the 4.x docs", env: map[string]string{EnvVirtualIPs: "10.1.1.1", EnvPreemption: "preempt_nodelay 300"},
			want: []string{`OPENSHIFT_HA_PREEMPTION="preempt_nodelay 300": want nopreempt, preempt, or preempt_delay SECONDS`}},
		{name: "relative check script", env: map[string]string{EnvVirtualIPs: "10.1.1.1", EnvCheckScript: "check.sh"},
			want: []string{`OPENSHIFT_HA_CHECK_SCRIPT="check.sh": want the full path`}},
		{name: "interval zero", env: map[string]string{EnvVirtualIPs: "10.1.1.1", EnvCheckInterval: "0"},
			want: []string{`OPENSHIFT_HA_CHECK_INTERVAL="0": want seconds between checks`}},
		{name: "excluded VRID out of range", env: map[string]string{EnvVirtualIPs: "10.1.1.1", EnvExcludedVRIDsImage: "9 300"},
			want: []string{`HA_EXCLUDED_VRRP_IDS="9 300": want VRIDs from 1 to 255 separated by spaces or commas ("300" is not one)`}},
		{name: "bad chain", env: map[string]string{EnvVirtualIPs: "10.1.1.1", EnvIptablesChain: "IN PUT"},
			want: []string{`OPENSHIFT_HA_IPTABLES_CHAIN="IN PUT": want a chain name`}},
		{name: "bad groups", env: map[string]string{EnvVirtualIPs: "10.1.1.1", EnvVIPGroups: "-1"},
			want: []string{`OPENSHIFT_HA_VIP_GROUPS="-1": want a whole number of groups`}},
		{name: "every error at once", env: map[string]string{EnvVirtualIPs: "10.1.1.1", EnvMonitorPort: "x", EnvReplicaCount: "y"},
			want: []string{"OPENSHIFT_HA_MONITOR_PORT", "OPENSHIFT_HA_REPLICA_COUNT"}},
		// A command line without an environment (vipstack manifest
		// ipfailover) names the flags, also of unset variables.
		{name: "flag names: VIPs required", flags: map[string]string{EnvUseUnicast: "true"}, flagNames: true,
			want: []string{"--virtual-ips is required", "--use-unicast=true needs --unicast-peers"}},
		{name: "flag names: a value from the environment is named by its variable", flags: map[string]string{EnvVirtualIPs: "10.1.1.1"}, flagNames: true,
			env: map[string]string{EnvCheckInterval: "x"}, want: []string{`OPENSHIFT_HA_CHECK_INTERVAL="x": want seconds`}},
		{name: "bad VIP range", env: map[string]string{EnvVirtualIPs: "10.1.1.9-3"},
			want: []string{`OPENSHIFT_HA_VIRTUAL_IPS="10.1.1.9-3": "10.1.1.9-3": the range ends (10.1.1.3) before it starts (10.1.1.9)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(Input{Env: tc.env, Flags: tc.flags, FlagNames: tc.flagNames})
			if err == nil {
				t.Fatalf("Parse succeeded, want an error containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Parse error:\n%v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

// TestSpecWithoutVIPs: the settings a running pool keeps have no list of
// VIPs but still their family, and the settings they came from are as
// they were.
func TestSpecWithoutVIPs(t *testing.T) {
	for _, tc := range []struct {
		vips string
		want int
	}{
		{"10.1.1.1-250", 4},
		{"fd00:bb::1:0-1d", 6},
	} {
		s, err := Parse(Input{Env: map[string]string{EnvVirtualIPs: tc.vips}})
		if err != nil {
			t.Fatal(err)
		}
		n := len(s.VIPs)
		c := s.withoutVIPs()
		if c.VIPs != nil || c.Family() != tc.want {
			t.Errorf("%s: without its VIPs: %d VIPs, IPv%d; want none, IPv%d", tc.vips, len(c.VIPs), c.Family(), tc.want)
		}
		if len(s.VIPs) != n || s.Family() != tc.want || s.family != 0 {
			t.Errorf("%s: the settings it came from changed: %d VIPs (want %d), IPv%d", tc.vips, len(s.VIPs), n, s.Family())
		}
		if c2 := c.withoutVIPs(); c2.Family() != tc.want {
			t.Errorf("%s: released twice: IPv%d, want IPv%d", tc.vips, c2.Family(), tc.want)
		}
		if c.ConfigName != s.ConfigName || c.CheckInterval != s.CheckInterval || !slices.Equal(c.ScriptEnv, s.ScriptEnv) {
			t.Errorf("%s: the other settings changed: %+v, want %+v", tc.vips, c, s)
		}
	}
}

func TestEnvFrom(t *testing.T) {
	got := EnvFrom([]string{"PATH=/bin", "OPENSHIFT_HA_VIRTUAL_IPS=10.1.1.1", "HA_EXCLUDED_VRRP_IDS=9", "OPENSHIFT_MASTER=x", "OPENSHIFT_HA_X=a=b"})
	want := map[string]string{"OPENSHIFT_HA_VIRTUAL_IPS": "10.1.1.1", "HA_EXCLUDED_VRRP_IDS": "9", "OPENSHIFT_HA_X": "a=b"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("EnvFrom (-want +got):\n%s", diff)
	}
}

func TestExpandVIPs(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "10.1.1.1-3", want: []string{"10.1.1.1", "10.1.1.2", "10.1.1.3"}},
		{in: "1.1.1.1, 2.2.2.2,3.3.3.3-4  4.4.4.4", want: []string{"1.1.1.1", "2.2.2.2", "3.3.3.3", "3.3.3.4", "4.4.4.4"}},
		{in: "10.1.1.100-100", want: []string{"10.1.1.100"}},
		{in: "10.1.1.254-10.1.2.1", want: []string{"10.1.1.254", "10.1.1.255", "10.1.2.0", "10.1.2.1"}},
		{in: "fd00::1f39-1f3b", want: []string{"fd00::1f39", "fd00::1f3a", "fd00::1f3b"}},
		{in: "fd00::ffff-fd00::1:1", want: []string{"fd00::ffff", "fd00::1:0", "fd00::1:1"}},
		{in: "", wantErr: "no VIPs"},
		{in: "10.1.1.1/24", wantErr: `"10.1.1.1/24" is not an IPv4 or IPv6 address`},
		{in: "10.1.1.1-300", wantErr: "want the last octet (0..255)"},
		{in: "10.1.1.1,fd00::1", wantErr: "mixes IPv4 and IPv6"},
		{in: "10.1.1.1-3,10.1.1.2", wantErr: "10.1.1.2 is listed twice"},
		{in: "224.0.0.18", wantErr: "not a unicast address"},
		{in: "10.0.0.0-10.255.0.0", wantErr: "more than 65536 VIPs"},
		{in: "10.1.1.1-fd00::1", wantErr: "not of the start's address family"},
		{in: "10.1.1.1 - 10", wantErr: `"-": spaces around '-' split a range into entries`},
		{in: "10.1.1.1 -10", wantErr: `"-10": spaces around '-' split a range into entries`},
		{in: "10.1.1.1- 10", wantErr: `"10.1.1.1-": spaces around '-' split a range into entries`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ExpandVIPs(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ExpandVIPs(%q) = %v, %v; want error containing %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var gs []string
			for _, a := range got {
				gs = append(gs, a.String())
			}
			if diff := cmp.Diff(tc.want, gs); diff != "" {
				t.Errorf("ExpandVIPs(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

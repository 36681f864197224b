package keepalived

import (
	"net/netip"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestIssue27Keywords checks the keywords added for issue 27 (multicast
// groups, unicast source checks, notify users, VMAC, process tracking):
// what each parses to, the warnings in keepalived's words, and that the
// result survives Format.
func TestIssue27Keywords(t *testing.T) {
	tests := []struct {
		name         string
		conf         string
		get          func(*Config) any
		want         any
		wantWarnings []string
	}{
		{
			name: "mcast groups",
			conf: "global_defs {\n vrrp_mcast_group4 239.1.2.3\n vrrp_mcast_group6 ff02::13\n}\n" + vi(""),
			get:  func(c *Config) any { return []netip.Addr{c.Global.McastGroup4, c.Global.McastGroup6} },
			want: []netip.Addr{netip.MustParseAddr("239.1.2.3"), netip.MustParseAddr("ff02::13")},
		},
		{
			name:         "mcast group6 not link-local",
			conf:         "global_defs {\n vrrp_mcast_group6 ff05::12\n}\n" + vi(""),
			get:          func(c *Config) any { return c.Global.McastGroup6 },
			want:         netip.MustParseAddr("ff05::12"),
			wantWarnings: []string{"k.conf:2: vrrp_mcast_group6 [ff05::12] should be link-local multicast."},
		},
		{
			name: "mcast groups default",
			conf: vi(""),
			get:  func(c *Config) any { return []bool{c.Global.McastGroup4.IsValid(), c.Global.McastGroup6.IsValid()} },
			want: []bool{false, false},
		},
		{
			name: "check_unicast_src",
			conf: "global_defs {\n vrrp_check_unicast_src\n}\n" + vi(" check_unicast_src\n unicast_peer {\n  198.18.0.12\n }\n"),
			get:  func(c *Config) any { return []bool{c.Global.CheckUnicastSrc, c.Instances[0].CheckUnicastSrc} },
			want: []bool{true, true},
		},
		{
			name: "notify users",
			conf: vi(" notify_master \"/bin/n master\" root root\n notify_fault /bin/f nobody\n notify /bin/any\n"),
			get:  func(c *Config) any { return c.Instances[0].Notifies() },
			want: Notify{
				Master: "/bin/n master", MasterAs: RunAs{User: "root", Group: "root"},
				Fault: "/bin/f", FaultAs: RunAs{User: "nobody"}, Any: "/bin/any",
			},
		},
		{
			name: "sync group notify user",
			conf: vi("") + inst("VJ", "2", "198.18.0.2") + "vrrp_sync_group G {\n group {\n  VI\n  VJ\n }\n notify_stop /bin/s daemon adm\n}\n",
			get:  func(c *Config) any { return c.SyncGroups[0].Notify },
			want: Notify{Stop: "/bin/s", StopAs: RunAs{User: "daemon", Group: "adm"}},
		},
		{
			name: "use_vmac default name",
			conf: vi(" use_vmac\n"),
			get: func(c *Config) any {
				in := c.Instances[0]
				return []any{in.UseVMAC, in.VMACName, in.VMACInterface(), in.VMACXmitBase}
			},
			want: []any{true, "", "vrrp.1", false},
		},
		{
			name: "use_vmac named, xmit base",
			conf: vi(" use_vmac vm1\n vmac_xmit_base\n"),
			get: func(c *Config) any {
				in := c.Instances[0]
				return []any{in.UseVMAC, in.VMACName, in.VMACInterface(), in.VMACXmitBase}
			},
			want: []any{true, "vm1", "vm1", true},
		},
		{
			name:         "use_vmac unicast sets vmac_xmit_base",
			conf:         vi(" use_vmac\n unicast_peer {\n  198.18.0.12\n }\n"),
			get:          func(c *Config) any { return c.Instances[0].VMACXmitBase },
			want:         true,
			wantWarnings: []string{"k.conf:7: (VI) unicast with use_vmac requires vmac_xmit_base - setting"},
		},
		{
			name:         "vmac_xmit_base alone",
			conf:         vi(" vmac_xmit_base\n"),
			get:          func(c *Config) any { return c.Instances[0].VMACXmitBase },
			want:         false,
			wantWarnings: []string{"k.conf:7: (VI) vmac_xmit_base is only valid with a vmac"},
		},
		{
			name: "track_process defaults",
			conf: "vrrp_track_process p {\n process haproxy\n}\n" + vi(" track_process {\n  p\n }\n"),
			get:  func(c *Config) any { return []any{*c.Processes["p"], c.Instances[0].TrackProcesses} },
			want: []any{
				TrackProcess{Name: "p", Pos: Pos{"k.conf", 1}, Process: "haproxy", Quorum: 1, QuorumMax: -1},
				[]TrackScript{{Name: "p", Pos: Pos{"k.conf", 11}}},
			},
		},
		{
			name: "track_process parameters imply exact and full_command",
			conf: "vrrp_track_process p {\n process \"/bin/a b\" -c \"x y\"\n weight 10\n quorum 2\n quorum_max 3\n delay 1.5\n}\n" +
				vi(" track_process {\n  p weight -5\n }\n"),
			get: func(c *Config) any { return []any{*c.Processes["p"], c.Instances[0].TrackProcesses[0].Weight} },
			want: []any{
				TrackProcess{Name: "p", Pos: Pos{"k.conf", 1}, Process: "/bin/a b", Params: []string{"-c", "x y"}, ParamMatch: "exact",
					FullCommand: true, Weight: 10, Quorum: 2, QuorumMax: 3, ForkDelay: 1500 * time.Millisecond, TerminateDelay: 1500 * time.Millisecond},
				-5,
			},
		},
		{
			name: "track_process quorum_max 0",
			conf: "vrrp_track_process p {\n process x\n quorum_max 0\n param_match initial\n}\n" + vi(""),
			get:  func(c *Config) any { return *c.Processes["p"] },
			want: TrackProcess{Name: "p", Pos: Pos{"k.conf", 1}, Process: "x", ParamMatch: "initial", FullCommand: true, Quorum: 0, QuorumMax: 0},
		},
		{
			name: "track_process defined after its use",
			conf: vi(" track_process {\n  p\n }\n") + "vrrp_track_process p {\n process x\n}\n",
			get:  func(c *Config) any { return len(c.Instances[0].TrackProcesses) },
			want: 0,
			wantWarnings: []string{"k.conf:8: (VI) track process p not found, ignoring... WARNING: vrrp_track_process p is defined at " +
				"k.conf:11, after this track_process; keepalived 2.2.7 only knows those defined above their use, so VI runs WITHOUT " +
				"it (vipstack does the same); move vrrp_track_process p above it"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("k.conf", []byte(tc.conf), fstest.MapFS{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, tc.get(cfg), cmpOpts); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			var warnings []string
			for _, w := range cfg.Warnings {
				if !strings.Contains(w, "enable_script_security") && !strings.Contains(w, "has only one") {
					warnings = append(warnings, w)
				}
			}
			if diff := cmp.Diff(tc.wantWarnings, warnings, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			checkRoundTrip(t, cfg)
		})
	}
}

// TestIssue27Errors: bad values of the new keywords are errors naming the
// line, the value and what is accepted.
func TestIssue27Errors(t *testing.T) {
	tests := []struct {
		name, conf, want string
	}{
		{
			name: "mcast group4 not multicast",
			conf: "global_defs {\n vrrp_mcast_group4 10.1.1.1\n}\n" + vi(""),
			want: "k.conf:2: vrrp_mcast_group4 [10.1.1.1] is not multicast (keepalived skips it and uses 224.0.0.18; accepted: an IPv4 multicast address, default 224.0.0.18)",
		},
		{
			name: "mcast group4 IPv6",
			conf: "global_defs {\n vrrp_mcast_group4 ff02::13\n}\n" + vi(""),
			want: "k.conf:2: vrrp_mcast_group4 [ff02::13] is not IPv4 (keepalived skips it and uses 224.0.0.18; accepted: an IPv4 multicast address, default 224.0.0.18)",
		},
		{
			name: "mcast group6 garbage",
			conf: "global_defs {\n vrrp_mcast_group6 nope\n}\n" + vi(""),
			want: "k.conf:2: Can't parse vrrp_mcast_group6 [nope] (keepalived skips it and uses ff02::12; accepted: an IPv6 multicast address, default ff02::12)",
		},
		{
			name: "mcast group two values",
			conf: "global_defs {\n vrrp_mcast_group4 224.0.0.19 224.0.0.20\n}\n" + vi(""),
			want: "k.conf:2: vrrp_mcast_group4 takes one value (an IPv4 multicast address), got 2 values",
		},
		{
			name: "check_unicast_src with a value",
			conf: vi(" check_unicast_src yes\n"),
			want: "k.conf:7: check_unicast_src takes no value, got 1 values",
		},
		{
			name: "use_vmac MAC",
			conf: vi(" use_vmac vm1 00:11:22:33:44:55\n"),
			want: "k.conf:7: use_vmac takes an optional interface name, got 2 values",
		},
		{
			name: "use_vmac MAC alone",
			conf: vi(" use_vmac 00:11:22:33:44:55\n"),
			want: "k.conf:7: use_vmac MAC address \"00:11:22:33:44:55\" is not supported by vipstack (accepted: use_vmac [NAME]; the MAC is 00:00:5e:00:01:VRID, or 00:00:5e:00:02:VRID for IPv6)",
		},
		{
			name: "use_vmac bad name",
			conf: vi(" use_vmac a/b\n"),
			want: "k.conf:7: VMAC interface name 'a/b' too long or invalid characters (accepted: 1-15 characters, no \"/\", \":\" or blanks)",
		},
		{
			name: "two instances on one VMAC",
			conf: vi(" use_vmac\n") + "vrrp_instance VJ {\n interface eth1\n virtual_router_id 1\n use_vmac\n virtual_ipaddress {\n  198.18.0.2\n }\n}\n",
			want: "k.conf:12: (VJ) VRRP instance VI is already using vrrp.1 (at k.conf:1); name the VMAC interface: use_vmac NAME",
		},
		{
			name: "track_process without process",
			conf: "vrrp_track_process p {\n quorum 1\n}\n" + vi(""),
			want: "k.conf:1: track process 'p' process name not specified",
		},
		{
			name: "track_process quorum_max below quorum",
			conf: "vrrp_track_process p {\n process x\n quorum 3\n quorum_max 2\n}\n" + vi(""),
			want: "k.conf:4: quorum_max 2 is less than quorum 3 (accepted: quorum_max >= quorum)",
		},
		{
			name: "track_process bad param_match",
			conf: "vrrp_track_process p {\n process x\n param_match all\n}\n" + vi(""),
			want: "k.conf:3: Invalid param_match type all (accepted: nothing, initial, partial)",
		},
		{
			name: "track_process weight out of range",
			conf: "vrrp_track_process p {\n process x\n weight 255\n}\n" + vi(""),
			want: "k.conf:3: weight 255 is out of range (accepted: -254..254)",
		},
		{
			name: "track_process delay and fork_delay",
			conf: "vrrp_track_process p {\n process x\n delay 1\n fork_delay 2\n}\n" + vi(""),
			want: "k.conf:3: delay and fork_delay at k.conf:4 both set the fork_delay; keep one",
		},
		{
			name: "track_process unknown keyword",
			conf: "vrrp_track_process p {\n process x\n interval 1\n}\n" + vi(""),
			want: "k.conf:3: unknown keyword \"interval\" in vrrp_track_process (accepted: process, param_match, weight, quorum, quorum_max, fork_delay, terminate_delay, delay, full_command)",
		},
		{
			name: "track_process in a sync group",
			conf: "vrrp_track_process p {\n process x\n}\n" + vi("") + "vrrp_sync_group G {\n group {\n  VI\n }\n track_process {\n  p\n }\n}\n",
			want: "k.conf:15: keyword \"track_process\" is not supported by vipstack",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("k.conf", []byte(tc.conf), fstest.MapFS{})
			if err == nil {
				t.Fatalf("Parse succeeded, want error %q", tc.want)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

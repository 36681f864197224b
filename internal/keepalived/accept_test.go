package keepalived

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestParseAccepts checks configurations that parse, the values they
// resolve to and the warnings they produce.
func TestParseAccepts(t *testing.T) {
	first := func(c *Config) *Instance { return c.Instances[0] }
	tests := []struct {
		name         string
		conf         string
		files        fstest.MapFS
		get          func(*Config) any
		want         any
		wantWarnings []string
	}{
		{
			name: "defaults",
			conf: vi(""),
			get: func(c *Config) any {
				in := *first(c)
				in.VIPs = nil
				return in
			},
			want: Instance{
				Name: "VI", Pos: Pos{"k.conf", 1}, InitialState: "BACKUP", Interface: "eth0", VRID: 1,
				Priority: 100, AdvertInterval: time.Second, Version: 2, Preempt: true,
				GARPMasterDelay: 5 * time.Second, GARPMasterRepeat: 5, GARPMasterRefreshRepeat: 1, Accept: true,
			},
		},
		{
			name: "a repeated unicast_peer is sent to once, with a warning (keepalived 2.2.7 sends to it twice)",
			conf: vi(" unicast_peer {\n  198.18.0.2\n  198.18.0.3\n  198.18.0.2\n }\n unicast_peer {\n  198.18.0.3\n }\n"),
			get:  func(c *Config) any { return first(c).UnicastPeers },
			want: []netip.Addr{netip.MustParseAddr("198.18.0.2"), netip.MustParseAddr("198.18.0.3")},
			wantWarnings: []string{
				"k.conf:10: unicast_peer 198.18.0.2 is already listed at k.conf:8 in vrrp_instance \"VI\"; the repeat is ignored " +
					"(keepalived 2.2.7 sends each advert to it once per entry)",
				"k.conf:13: unicast_peer 198.18.0.3 is already listed at k.conf:9 in vrrp_instance \"VI\"; the repeat is ignored " +
					"(keepalived 2.2.7 sends each advert to it once per entry)",
			},
		},
		{
			// keepalived 2.2.7 (measured): "(VI_1) VRRP version 3 does not
			// support authentication. Ignoring.", and runs the instance.
			name: "authentication with version 3 is ignored with a warning, as keepalived does",
			conf: vi(" version 3\n authentication {\n  auth_type PASS\n  auth_pass x\n }\n"),
			get:  func(c *Config) any { return []string{first(c).AuthType, first(c).AuthPass} },
			want: []string{"", ""},
			wantWarnings: []string{
				"k.conf:8: authentication is not part of VRRP version 3 (RFC 5798); vrrp_instance \"VI\" runs without it, as keepalived does",
			},
		},
		{
			// keepalived 2.2.7 (measured with keepalived -t): "(VI_1) track
			// script chk_late not found, ignoring..." for a vrrp_script
			// defined after the instance and for one never defined; the
			// instance runs without them.
			name: "track_script naming a later or undefined vrrp_script is dropped with keepalived's warning",
			conf: script + vi(" track_script {\n  chk\n  later\n  nope\n }\n") + "vrrp_script later {\n script /bin/true\n}\n" +
				"vrrp_sync_group G {\n group {\n  VI\n }\n track_script {\n  later\n  nope\n }\n}\n",
			get: func(c *Config) any {
				return [][]TrackScript{first(c).TrackScripts, c.SyncGroups[0].TrackScripts}
			},
			want: [][]TrackScript{{{Name: "chk", Pos: Pos{"k.conf", 11}}}, {{Name: "later", Pos: Pos{"k.conf", 24}}}},
			wantWarnings: []string{
				"k.conf:12: (VI) track script later not found, ignoring... WARNING: vrrp_script later is defined at k.conf:16, " +
					"after this track_script; keepalived 2.2.7 only knows scripts defined above their use, so VI runs WITHOUT " +
					"this check (vipstack does the same); move vrrp_script later above it",
				"k.conf:13: (VI) track script nope not found, ignoring... (defined: chk, later); VI runs without it, as in keepalived",
				"k.conf:25: (G) track script nope not found, ignoring... (defined: chk, later); G runs without it, as in keepalived",
				"k.conf:19: vrrp_sync_group \"G\" has only one vrrp_instance",
				"k.conf:4: scripts are configured but enable_script_security is not set (keepalived reports a SECURITY VIOLATION)",
			},
		},
		{
			name: "SMTP alert settings, smtp_alert resolved as keepalived does (instance, else smtp_alert_vrrp, else smtp_alert)",
			conf: "global_defs {\n notification_email {\n  a@example.org\n  b@example.org\n }\n notification_email_from k@example.org\n" +
				" smtp_server localhost\n smtp_helo_name n1.example\n smtp_connect_timeout 15\n smtp_alert\n smtp_alert_vrrp off\n" +
				" smtp_alert_checker yes\n no_email_faults\n checker_no_swap\n}\n" +
				inst("A", "1", "198.18.0.1") + strings.Replace(inst("B", "2", "198.18.0.2"), " interface", " smtp_alert\n interface", 1),
			get: func(c *Config) any {
				return []any{c.Global.NotificationEmail, c.Global.NotificationEmailFrom, c.Global.SMTPServer, c.Global.SMTPHeloName,
					c.Global.SMTPConnectTimeout, c.Global.NoEmailFaults, c.Global.CheckerNoSwap, c.Instances[0].SMTPAlert, c.Instances[1].SMTPAlert}
			},
			want: []any{[]string{"a@example.org", "b@example.org"}, "k@example.org", "localhost:25", "n1.example",
				15 * time.Second, true, true, false, true},
		},
		{
			name: "smtp_server with a port; global smtp_alert applies when smtp_alert_vrrp is not set",
			conf: "global_defs {\n notification_email {\n  a@example.org\n }\n smtp_server 198.18.0.9 2525\n smtp_alert\n}\n" + vi(""),
			get:  func(c *Config) any { return []any{c.Global.SMTPServer, first(c).SMTPAlert} },
			want: []any{"198.18.0.9:2525", true},
		},
		{
			// keepalived 2.2.7 -t: "Warning - empty notification_email block".
			name: "empty notification_email block",
			conf: "global_defs {\n notification_email {\n }\n}\n" + vi(" smtp_alert\n"),
			get:  func(c *Config) any { return first(c).SMTPAlert },
			want: true,
			wantWarnings: []string{
				"k.conf:2: Warning - empty notification_email block",
				"k.conf:5: vrrp_instance \"VI\" has smtp_alert but global_defs has no smtp_server: no alert is sent (as in keepalived)",
			},
		},
		{
			// keepalived 2.2.7 -t: no message; the daemon runs at priority 100.
			name: "words after state are ignored with a warning, as keepalived ignores them",
			conf: vi(" state MASTER priority 200\n"),
			get:  func(c *Config) any { return []any{first(c).InitialState, first(c).Priority} },
			want: []any{"MASTER", uint8(100)},
			wantWarnings: []string{
				"k.conf:7: state MASTER: the words after it (\"priority 200\") are ignored, as keepalived 2.2.7 ignores them; put each setting on its own line",
			},
		},
		{
			name: "a repeated nopreempt is read once, with a warning",
			conf: vi(" nopreempt\n nopreempt\n"),
			get:  func(c *Config) any { return first(c).Preempt },
			want: false,
			wantWarnings: []string{
				"k.conf:8: nopreempt is repeated (first at k.conf:7); keepalived 2.2.7 takes the repeat without a word, it changes nothing",
			},
		},
		{
			// keepalived 2.2.7 -t (measured): "vrrp process real-time
			// priority 0 less than minimum 1 - setting to minimum", and
			// "... 100 greater than maximum 99 - setting to maximum".
			name: "vrrp_rt_priority below 1 is 1, with a warning, as keepalived",
			conf: "global_defs {\n vrrp_rt_priority 0\n}\n" + vi(""),
			get:  func(c *Config) any { return c.Global.RTPriority },
			want: 1,
			wantWarnings: []string{
				"k.conf:2: vrrp_rt_priority 0 is below the minimum; 1 is used, as keepalived does (accepted: 1..99)",
			},
		},
		{
			name: "vrrp_rt_priority above 99 is 99, with a warning, as keepalived",
			conf: "global_defs {\n vrrp_rt_priority 100\n}\n" + vi(""),
			get:  func(c *Config) any { return c.Global.RTPriority },
			want: 99,
			wantWarnings: []string{
				"k.conf:2: vrrp_rt_priority 100 is above the maximum; 99 is used, as keepalived does (accepted: 1..99)",
			},
		},
		{
			name: "scheduling settings",
			conf: "global_defs {\n vrrp_rt_priority 50\n vrrp_priority -5\n vrrp_no_swap\n vrrp_rlimit_rttime 1\n" +
				" checker_rlimit_rttime 100000\n bfd_rlimit_rttime 2147483647\n}\n" + vi(""),
			get: func(c *Config) any {
				g := c.Global
				return []any{g.RTPriority, g.Nice, g.NoSwap, g.RLimitRTTime, g.CheckerRLimitRTTime, g.BFDRLimitRTTime}
			},
			want: []any{50, -5, true, 1, 100000, 2147483647},
		},
		{
			name: "default_interface is recorded (keepalived uses it only for static addresses)",
			conf: "global_defs {\n default_interface eth1\n}\n" + vi(""),
			get:  func(c *Config) any { return c.Global.DefaultInterface },
			want: "eth1",
		},
		{
			name: "dynamic_interfaces is accepted (vipstack always runs an instance with a missing interface in FAULT)",
			conf: "global_defs {\n dynamic_interfaces allow_if_changes\n}\n" + vi(""),
			get:  func(c *Config) any { return len(c.Instances) },
			want: 1,
		},
		{
			// keepalived 2.2.7 (measured: keepalived -t exits 0 and the
			// running daemon dumps instances A and B with their VRIDs,
			// VIPs, password and tracked script) splits an unquoted "{"
			// or "}" from the word it touches; a quoted one stays.
			name: "braces touching words are words of their own, as in keepalived",
			conf: "vrrp_script chk {\n script /bin/true\n}\n" +
				"vrrp_instance A{\n interface eth0\n virtual_router_id 10\n virtual_ipaddress{\n  198.18.0.100/32}\n" +
				" authentication{auth_type PASS\n  auth_pass \"a{b}\"}\n track_script {chk}\n}vrrp_instance B {\n" +
				" interface eth0\n virtual_router_id 11\n virtual_ipaddress {198.18.0.101/32}\n}\n",
			get: func(c *Config) any {
				var out []string
				for _, in := range c.Instances {
					out = append(out, fmt.Sprint(in.Name, " ", in.VRID, " ", in.VIPs[0].Prefix, " ", in.AuthPass, " ", len(in.TrackScripts)))
				}
				return out
			},
			want: []string{"A 10 198.18.0.100/32 a{b} 1", "B 11 198.18.0.101/32  0"},
			wantWarnings: []string{
				"k.conf:4: scripts are configured but enable_script_security is not set (keepalived reports a SECURITY VIOLATION)",
			},
		},
		{
			name: "nopreempt with BACKUP",
			conf: vi(" nopreempt\n"),
			get:  func(c *Config) any { return first(c).Preempt },
			want: false,
		},
		{
			name:         "nopreempt with priority 255 is accepted and cleared",
			conf:         vi(" priority 255\n nopreempt\n"),
			get:          func(c *Config) any { return first(c).Preempt },
			want:         true,
			wantWarnings: []string{"k.conf:8: nopreempt has no effect with priority 255: the address owner always preempts (keepalived clears it)"},
		},
		{
			name: "weights with priority 255 are noted",
			conf: script + "vrrp_script chk0 {\n script /bin/true\n weight 0\n}\n" +
				vi(" priority 255\n track_script {\n  chk weight -20\n  chk0\n }\n track_interface {\n  eth1 weight 10\n }\n"),
			get:  func(c *Config) any { return first(c).Priority },
			want: uint8(255),
			wantWarnings: []string{
				"k.conf:16: track_script chk has weight -20, which has no effect with priority 255: the address owner keeps 255 " +
					"(keepalived ignores the script); use weight 0 to go to FAULT when it fails",
				"k.conf:20: track_interface eth1 has weight 10, which has no effect with priority 255: the address owner keeps 255",
				"k.conf:8: scripts are configured but enable_script_security is not set (keepalived reports a SECURITY VIOLATION)",
			},
		},
		{
			name:         "nopreempt with state MASTER is cleared",
			conf:         vi(" state MASTER\n nopreempt\n"),
			get:          func(c *Config) any { return first(c).Preempt },
			want:         true,
			wantWarnings: []string{"k.conf:8: nopreempt has no effect with state MASTER (keepalived clears it); use state BACKUP"},
		},
		{
			name:         "preempt_delay with nopreempt is cleared",
			conf:         vi(" nopreempt\n preempt_delay 5\n"),
			get:          func(c *Config) any { return first(c).PreemptDelay },
			want:         time.Duration(0),
			wantWarnings: []string{"k.conf:8: preempt_delay has no effect with nopreempt (keepalived clears it)"},
		},
		{
			name:         "preempt_delay with state MASTER is cleared",
			conf:         vi(" state MASTER\n preempt_delay 5\n"),
			get:          func(c *Config) any { return first(c).PreemptDelay },
			want:         time.Duration(0),
			wantWarnings: []string{"k.conf:8: preempt_delay has no effect with state MASTER (keepalived clears it, and preempts at once); use state BACKUP"},
		},
		{
			name: "preempt_delay with state BACKUP is kept",
			conf: vi(" state BACKUP\n preempt_delay 5\n"),
			get:  func(c *Config) any { return first(c).PreemptDelay },
			want: 5 * time.Second,
		},
		{
			name: "own interface is not tracked twice",
			conf: vi(" track_interface {\n  eth0\n  eth1 weight -20\n }\n"),
			get:  func(c *Config) any { return first(c).TrackInterfaces },
			want: []TrackInterface{{Name: "eth1", Weight: -20, Pos: Pos{"k.conf", 9}}},
			wantWarnings: []string{
				"k.conf:8: track_interface eth0 is the instance's own interface, which is always tracked; entry ignored as keepalived does",
			},
		},
		{
			name:         "glob matching nothing",
			conf:         "include conf.d/*.conf\n" + vi(""),
			get:          func(c *Config) any { return c.Files },
			want:         []string{"k.conf"},
			wantWarnings: []string{`k.conf:1: include "conf.d/*.conf" matched no files`},
		},
		{
			name: "fractional script interval",
			conf: "vrrp_script chk {\n script /bin/true\n interval 1.5\n}\n",
			get:  func(c *Config) any { return []time.Duration{c.Scripts["chk"].Interval, c.Scripts["chk"].Timeout} },
			want: []time.Duration{1500 * time.Millisecond, 1500 * time.Millisecond},
			wantWarnings: []string{
				"k.conf:3: interval 1.5 is not a whole number of seconds: vipstack accepts it, keepalived 2.2.7 does not",
			},
		},
		{
			name: "VIP options",
			conf: inst("VI", "1", "198.18.0.1/24 -nodad") + inst("V6", "1", "fd00::1/64 label eth0:v6 dev eth1 scope link"),
			get:  func(c *Config) any { return []VIP{c.Instances[0].VIPs[0], c.Instances[1].VIPs[0]} },
			want: []VIP{
				withPos(MakeVIP(netip.MustParsePrefix("198.18.0.1/24"), VIPOptions{NoDAD: true}), Pos{"k.conf", 5}),
				withPos(MakeVIP(netip.MustParsePrefix("fd00::1/64"), VIPOptions{Label: "eth0:v6", Dev: "eth1", Scope: "link"}), Pos{"k.conf", 12}),
			},
			wantWarnings: []string{
				"k.conf:5: -nodad has no effect on IPv4 address 198.18.0.1",
				`k.conf:12: label "eth0:v6" has no effect on IPv6 address fd00::1`,
			},
		},
		{
			name: "IPv6 defaults to version 3, same VRID as IPv4 is fine",
			conf: inst("V4", "9", "198.18.0.1") + inst("V6", "9", "fd00::1"),
			get: func(c *Config) any {
				return []int{c.Instances[0].Version, c.Instances[1].Version, c.Instances[1].Family()}
			},
			want: []int{2, 3, 6},
		},
		{
			name: "same VRID on different interfaces is fine",
			conf: inst("A", "9", "198.18.0.1") + "vrrp_instance B {\n interface eth1\n virtual_router_id 9\n virtual_ipaddress {\n  198.18.1.1\n }\n}\n",
			get:  func(c *Config) any { return len(c.Instances) },
			want: 2,
		},
		{
			name: "version 3 allows centisecond adverts",
			conf: vi(" version 3\n advert_int 0.25\n"),
			get:  func(c *Config) any { return first(c).AdvertInterval },
			want: 250 * time.Millisecond,
		},
		{
			name:         "sync group of one",
			conf:         inst("A", "1", "198.18.0.1") + "vrrp_sync_group G {\n group {\n  A\n }\n}\n",
			get:          func(c *Config) any { return c.SyncGroups[0].Members },
			want:         []string{"A"},
			wantWarnings: []string{`k.conf:8: vrrp_sync_group "G" has only one vrrp_instance`},
		},
		{
			name: "layout: brace on next line, statements sharing a line, comments",
			conf: "global_defs { router_id \"r #1\" } # trailing\n" +
				"vrrp_instance VI\n{\n interface eth0 ! bang comment\n virtual_router_id 1\n" +
				" virtual_ipaddress { 198.18.0.1 }\n notify \"/bin/echo \\\"a b\\\" # not a comment\"\n}\n",
			get: func(c *Config) any {
				return []string{c.Global.RouterID, first(c).Notifies().Any, first(c).VIPs[0].Prefix.String()}
			},
			want: []string{"r #1", `/bin/echo "a b" # not a comment`, "198.18.0.1/32"},
			wantWarnings: []string{
				"k.conf:2: scripts are configured but enable_script_security is not set (keepalived reports a SECURITY VIOLATION)",
			},
		},
		{
			name: "IPv4 instance without addresses runs, with a warning (as keepalived 2.2.7)",
			conf: "vrrp_instance VI {\n interface eth0\n virtual_router_id 1\n}\n",
			get:  func(c *Config) any { return []int{len(first(c).VIPs), first(c).Family()} },
			want: []int{0, 4},
			wantWarnings: []string{
				`k.conf:1: vrrp_instance "VI" has no virtual_ipaddress: it takes part in elections but holds no address`,
			},
		},
		{
			// keepalived 2.2.7, measured with the running daemon's -d
			// dump: its VRRP instances read "auth_pass ab\#cd" and
			// "ab\!cd" as password "ab", "ab\\#cd" as "ab\\", a quoted
			// "ab\#cd" as ab\#cd, "script /bin/echo\#x" as /bin/echo and
			// "label d0:\#1" as d0: (only its global_defs dump showed
			// router_id ab\#cd as ab#cd). vipstack took ab#cd, a password
			// the keepalived nodes do not send.
			name: "a backslash does not protect # or ! outside quotes",
			conf: "vrrp_script chk {\n script /bin/echo\\#x\n}\n" + inst("A", "1", "198.18.0.1 label eth0:\\#1") +
				authInst("B", "2", `ab\#cd`) + authInst("C", "3", `ab\!cd`) + authInst("D", "4", `ab\\#cd`) + authInst("E", "5", `"ab\#cd"`),
			get: func(c *Config) any {
				out := []any{c.Scripts["chk"].Args, c.Instances[0].VIPs[0].Options().Label}
				for _, in := range c.Instances[1:] {
					out = append(out, in.AuthPass)
				}
				return out
			},
			want: []any{[]string{"/bin/echo"}, "eth0:", "ab", "ab", `ab\\`, `ab\#cd`},
		},
		{
			name: "script command splitting",
			conf: "global_defs {\n enable_script_security\n}\nvrrp_script chk {\n script \"/bin/sh -c 'test -e \\\"/run/a b\\\"'\"\n}\n",
			get:  func(c *Config) any { return []any{c.Scripts["chk"].Command, c.Scripts["chk"].Args} },
			want: []any{`/bin/sh -c 'test -e "/run/a b"'`, []string{"/bin/sh", "-c", `test -e "/run/a b"`}},
		},
		{
			// keepalived 2.2.7 (measured, keepalived -t exits 0 and the
			// daemon runs instance A only): "Configuration file
			// 'conf.d/b.conf' is not a regular non-executable file -
			// skipping", and "'conf.d/sub.conf/' is a directory -
			// skipping", also for a plain include of a directory.
			// vipstack read the executable file (running an instance
			// keepalived does not) and refused the file for the directory.
			name: "executable files and directories are skipped by include, as keepalived does",
			conf: "include conf.d/*.conf\ninclude other\n",
			files: fstest.MapFS{
				"conf.d/a.conf":          {Data: []byte(inst("A", "1", "198.18.0.1"))},
				"conf.d/b.conf":          {Data: []byte(inst("B", "2", "198.18.0.2")), Mode: 0o755},
				"conf.d/sub.conf/c.conf": {Data: []byte(inst("C", "3", "198.18.0.3"))},
				"other/d.conf":           {Data: []byte(inst("D", "4", "198.18.0.4"))},
			},
			get: func(c *Config) any {
				var names []string
				for _, in := range c.Instances {
					names = append(names, in.Name)
				}
				return []any{names, c.Files}
			},
			want: []any{[]string{"A"}, []string{"k.conf", "conf.d/a.conf"}},
			wantWarnings: []string{
				`k.conf:1: include "conf.d/*.conf": conf.d/b.conf is executable (mode 0755); skipped, as keepalived skips any include that is not a regular non-executable file`,
				`k.conf:1: include "conf.d/*.conf": conf.d/sub.conf is a directory; skipped, as keepalived does`,
				`k.conf:2: include "other": other is a directory; skipped, as keepalived does`,
			},
		},
		{
			// keepalived 2.2.7 globs with glibc's glob(3), where a leading
			// "." in a name must be matched by a "." in the pattern
			// (measured: "include conf.d/*.conf" read a.conf and not
			// .hidden.conf, "conf.d/.e*.conf" read .explicit.conf and
			// "conf.d/*/x.conf" not .dd/x.conf). Go's path.Match lets *
			// match it, so vipstack ran instances keepalived does not
			// (an editor's .swp file, a ConfigMap's ..data directory).
			name: "include globs do not match a leading dot, as glibc's glob",
			conf: "include conf.d/*.conf\ninclude conf.d/.e*.conf\ninclude conf.d/*/x.conf\n",
			files: fstest.MapFS{
				"conf.d/a.conf":         {Data: []byte(inst("A", "1", "198.18.0.1"))},
				"conf.d/.hidden.conf":   {Data: []byte(inst("H", "2", "198.18.0.2"))},
				"conf.d/.explicit.conf": {Data: []byte(inst("E", "3", "198.18.0.3"))},
				"conf.d/.dd/x.conf":     {Data: []byte(inst("D", "4", "198.18.0.4"))},
			},
			get: func(c *Config) any {
				var names []string
				for _, in := range c.Instances {
					names = append(names, in.Name)
				}
				return names
			},
			want:         []string{"A", "E"},
			wantWarnings: []string{`k.conf:3: include "conf.d/*/x.conf" matched no files`},
		},
		{
			name:  "include inside a block, relative to the including file",
			conf:  "include conf.d/vi.conf\n",
			files: fstest.MapFS{"conf.d/vi.conf": {Data: []byte(inst("VI", "1", "include ../vips/*"))}, "vips/a": {Data: []byte("198.18.0.1\n")}, "vips/b": {Data: []byte("198.18.0.2\n")}},
			get: func(c *Config) any {
				return []any{c.Files, first(c).VIPs[1].Pos()}
			},
			want: []any{[]string{"k.conf", "conf.d/vi.conf", "vips/a", "vips/b"}, Pos{"vips/b", 1}},
		},
		{
			name:  "a file included twice is listed once",
			conf:  "include a.conf\ninclude a.conf\n" + vi(""),
			files: fstest.MapFS{"a.conf": {Data: []byte("! nothing\n")}},
			get:   func(c *Config) any { return c.Files },
			want:  []string{"k.conf", "a.conf"},
		},
		{
			name: "global GARP settings are inherited unless overridden",
			conf: "global_defs {\n vrrp_garp_master_delay 0\n vrrp_garp_master_repeat 1\n vrrp_garp_master_refresh 30\n vrrp_garp_master_refresh_repeat 3\n}\n" +
				inst("A", "1", "198.18.0.1") + "vrrp_instance B {\n interface eth0\n virtual_router_id 2\n virtual_ipaddress {\n  198.18.0.2\n }\n" +
				" garp_master_delay 7\n garp_master_repeat 2\n garp_master_refresh 0\n garp_master_refresh_repeat 4\n}\n",
			get: func(c *Config) any {
				var out []any
				for _, in := range c.Instances {
					out = append(out, in.GARPMasterDelay, in.GARPMasterRepeat, in.GARPMasterRefresh, in.GARPMasterRefreshRepeat)
				}
				return out
			},
			want: []any{time.Duration(0), 1, 30 * time.Second, 3, 7 * time.Second, 2, time.Duration(0), 4},
		},
		{
			name: "track_script weight override",
			conf: "global_defs {\n enable_script_security\n}\n" + script + vi(" track_script {\n  chk\n  chk weight -7\n }\n"),
			get:  func(c *Config) any { return first(c).TrackScripts },
			want: []TrackScript{
				{Name: "chk", Pos: Pos{"k.conf", 14}},
				{Name: "chk", Weight: -7, HasWeight: true, Pos: Pos{"k.conf", 15}},
			},
		},
		{
			name: "no_accept, dont_track_primary, preempt_delay, auth",
			conf: vi(" no_accept\n dont_track_primary\n preempt_delay 4.12\n authentication {\n  auth_type PASS\n  auth_pass \"pa ss\"\n }\n"),
			get: func(c *Config) any {
				in := first(c)
				return []any{in.Accept, in.DontTrackPrimary, in.PreemptDelay, in.AuthType, in.AuthPass}
			},
			want: []any{false, true, 4120 * time.Millisecond, "PASS", "pa ss"},
		},
		{
			name: "max_auto_priority and startup delay",
			conf: "global_defs {\n max_auto_priority -1\n vrrp_startup_delay 5.5\n script_user nobody nogroup\n}\n" + vi(""),
			get: func(c *Config) any {
				g := c.Global
				return []any{g.MaxAutoPriority, g.StartupDelay, g.ScriptUser, g.ScriptGroup}
			},
			want: []any{-1, 5500 * time.Millisecond, "nobody", "nogroup"},
		},
		{
			name: "CRLF line endings",
			conf: "vrrp_instance VI {\r\n interface eth0\r\n virtual_router_id 1\r\n virtual_ipaddress {\r\n  198.18.0.1\r\n }\r\n}\r\n",
			get:  func(c *Config) any { return first(c).Interface },
			want: "eth0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{"k.conf": {Data: []byte(tt.conf)}}
			for name, f := range tt.files {
				fsys[name] = f
			}
			cfg, err := Parse("k.conf", []byte(tt.conf), fsys)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, tt.get(cfg), cmpOpts); diff != "" {
				t.Errorf("value mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantWarnings, cfg.Warnings); diff != "" {
				t.Errorf("warnings mismatch (-want +got):\n%s", diff)
			}
			checkRoundTrip(t, cfg) // includes are written inline
		})
	}
}

// authInst returns a vrrp_instance with VRID and VIP 198.18.0.VRID, and
// auth_pass written as pass.
func authInst(name, vrid, pass string) string {
	return "vrrp_instance " + name + " {\n interface eth0\n virtual_router_id " + vrid + "\n virtual_ipaddress {\n  198.18.0." + vrid +
		"\n }\n authentication {\n  auth_type PASS\n  auth_pass " + pass + "\n }\n}\n"
}

// withPos is v written at pos.
func withPos(v VIP, pos Pos) VIP {
	v.SetPos(pos)
	return v
}

package keepalived

import (
	"net/netip"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// builtInstance is a valid instance as a program builds it: no positions.
func builtInstance() *Instance {
	return &Instance{
		Name: "VI", InitialState: "BACKUP", Interface: "eth0", VRID: 1, Priority: 100,
		AdvertInterval: time.Second, Version: 2, Preempt: true, Accept: true,
		VIPs:            []VIP{{Prefix: netip.MustParsePrefix("198.18.0.1/32")}},
		GARPMasterDelay: 5 * time.Second, GARPMasterRepeat: 5, GARPMasterRefreshRepeat: 1,
	}
}

func builtConfig(edit func(*Config)) *Config {
	c := NewConfig()
	c.Scripts["chk"] = NewScript("chk", "/bin/true")
	c.Instances = []*Instance{builtInstance()}
	if edit != nil {
		edit(c)
	}
	return c
}

// TestValidateBuilt checks Validate on configurations built in code: the
// errors name the block and the setting, with no position.
func TestValidateBuilt(t *testing.T) {
	first := func(c *Config) *Instance { return c.Instances[0] }
	tests := []struct {
		name string
		edit func(*Config)
		want []string // each error line, in order
	}{
		{name: "valid"},
		{name: "advert interval not whole seconds for VRRPv2",
			edit: func(c *Config) { first(c).AdvertInterval = 1500 * time.Millisecond },
			want: []string{`vrrp_instance "VI": advert_int 1.5 is not valid for VRRP version 2 (accepted: whole seconds 1..255)`}},
		{name: "advert interval not centiseconds for VRRPv3",
			edit: func(c *Config) { first(c).Version, first(c).AdvertInterval = 3, 15*time.Millisecond },
			want: []string{`vrrp_instance "VI": advert_int 0.015 is not valid for VRRP version 3 (accepted: 0.01..40.95 seconds in steps of 0.01)`}},
		{name: "required settings",
			edit: func(c *Config) {
				first(c).Interface, first(c).VRID, first(c).Priority, first(c).InitialState = "", 0, 0, ""
			},
			want: []string{
				`vrrp_instance "VI": state "" is invalid (accepted: MASTER, BACKUP)`,
				`vrrp_instance "VI": interface is required`,
				`vrrp_instance "VI": virtual_router_id is required (1..255)`,
				`vrrp_instance "VI": priority 0 is out of range (accepted: 1..255)`,
			}},
		{name: "IPv6 with version 2",
			edit: func(c *Config) { first(c).VIPs = []VIP{{Prefix: netip.MustParsePrefix("fd00::1/128")}} },
			want: []string{`vrrp_instance "VI": has IPv6 virtual addresses, which need VRRP version 3, but version 2 is set`}},
		{name: "mixed families and a peer of the other family",
			edit: func(c *Config) {
				in := first(c)
				in.VIPs = append(in.VIPs, VIP{Prefix: netip.MustParsePrefix("fd00::1/128")})
				in.UnicastSrcIP = netip.MustParseAddr("198.18.0.2")
				in.UnicastPeers = []netip.Addr{netip.MustParseAddr("fd00::3")}
			},
			want: []string{
				`vrrp_instance "VI": virtual_ipaddress fd00::1 is IPv6 but the addresses before it are IPv4; put the other family in virtual_ipaddress_excluded or another instance`,
				`vrrp_instance "VI": unicast_peer fd00::3 is not an IPv4 address without zone, the family of the virtual addresses`,
			}},
		{name: "authentication",
			edit: func(c *Config) { first(c).AuthType = "AH" },
			want: []string{`vrrp_instance "VI": auth_type "AH" is invalid (accepted: PASS)`}},
		{name: "authentication with version 3",
			edit: func(c *Config) { first(c).AuthType, first(c).AuthPass, first(c).Version = "PASS", "x", 3 },
			want: []string{`vrrp_instance "VI": authentication is not part of VRRP version 3 (RFC 5798); leave it out`}},
		{name: "unknown track_script and bad VIP options",
			edit: func(c *Config) {
				in := first(c)
				in.TrackScripts = []TrackScript{{Name: "nope"}}
				in.VIPs[0].SetOptions(VIPOptions{Scope: "galaxy", Label: "a-label-of-sixteen"})
			},
			want: []string{
				`vrrp_instance "VI": virtual_ipaddress[0]: scope "galaxy" is invalid (accepted: global, site, link, host, nowhere)`,
				`vrrp_instance "VI": virtual_ipaddress[0]: label "a-label-of-sixteen" is longer than 15 characters`,
				`vrrp_instance "VI": track_script "nope" names no vrrp_script (defined: chk)`,
			}},
		{name: "duplicate VRID and address",
			edit: func(c *Config) {
				in := builtInstance()
				in.Name = "VI2"
				c.Instances = append(c.Instances, in)
			},
			want: []string{
				`vrrp_instance "VI2" uses interface eth0, virtual_router_id 1 and IPv4 like vrrp_instance "VI"; one of them must differ`,
				`address 198.18.0.1 on eth0 of vrrp_instance "VI2" is also in vrrp_instance "VI"; an address belongs to one instance ` +
					`(the instance that lets it go would remove it from under the other)`,
			}},
		{name: "script values",
			edit: func(c *Config) {
				sc := c.Scripts["chk"]
				sc.Command, sc.Interval, sc.Weight, sc.Rise = "", 0, 300, 0
			},
			want: []string{
				`vrrp_script "chk": script "" is not a command line (empty)`,
				`vrrp_script "chk": interval 0s is out of range (accepted: 0.000001..4294 seconds, in microseconds)`,
				`vrrp_script "chk": weight 300 is out of range (accepted: -253..253)`,
				`vrrp_script "chk": rise 0 is out of range (accepted: 1..2147483647)`,
			}},
		{name: "global values",
			edit: func(c *Config) { c.Global.VRRPVersion, c.Global.MaxAutoPriority = 4, 100 },
			want: []string{
				`global_defs: vrrp_version 4 is out of range (accepted: 2..3)`,
				`global_defs: max_auto_priority 100 is out of range (accepted: -1..99)`,
			}},
		{name: "sync group",
			edit: func(c *Config) {
				first(c).TrackScripts = []TrackScript{{Name: "chk", Weight: 10, HasWeight: true}}
				c.SyncGroups = []*SyncGroup{{Name: "G", Members: []string{"VI", "missing"}}}
			},
			want: []string{
				`vrrp_sync_group "G": member vrrp_instance "VI" tracks script "chk" with weight 10, which keepalived ignores in a sync group; use weight 0`,
				`vrrp_sync_group "G": member "missing" is not a defined vrrp_instance`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := builtConfig(tt.edit).Validate()
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("Validate() errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestValidateKeepsPositions checks that a parsed configuration, changed
// in code afterwards, gets errors at the file and line of the block.
func TestValidateKeepsPositions(t *testing.T) {
	cfg, err := Parse("k.conf", []byte(vi("")), fstest.MapFS{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Instances[0].AdvertInterval = 250 * time.Millisecond
	cfg.Instances[0].VIPs[0].SetOptions(VIPOptions{Dev: "a/b"})
	want := `k.conf:1: vrrp_instance "VI": advert_int 0.25 is not valid for VRRP version 2 (accepted: whole seconds 1..255)` + "\n" +
		`k.conf:5: vrrp_instance "VI": dev "a/b" is not a valid interface name (1-15 characters, no "/", ":" or blanks)`
	if err := cfg.Validate(); err == nil || err.Error() != want {
		t.Errorf("Validate() = %v\nwant:\n%s", err, want)
	}
}

// TestNewInstance checks that the constructors give what the reader gives
// a block that sets nothing beyond the required settings.
func TestNewInstance(t *testing.T) {
	parsed, err := Parse("k.conf", []byte("global_defs {\n vrrp_garp_master_delay 2\n}\n"+
		"vrrp_script chk {\n script \"/bin/true 'a b'\"\n}\n"+vi(" track_script {\n  chk\n }\n")), fstest.MapFS{})
	if err != nil {
		t.Fatal(err)
	}
	built := NewConfig()
	built.Global.GARPMasterDelay = 2 * time.Second
	built.Scripts["chk"] = NewScript("chk", "/bin/true 'a b'")
	in := built.NewInstance("VI")
	in.Interface, in.VRID = "eth0", 1
	in.VIPs = []VIP{{Prefix: netip.MustParsePrefix("198.18.0.1/32")}}
	in.TrackScripts = []TrackScript{{Name: "chk"}}
	built.Instances = []*Instance{in}
	if err := built.Validate(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(parsed, built, roundTripOpts); diff != "" {
		t.Errorf("built config differs from the parsed one (-parsed +built):\n%s", diff)
	}
}

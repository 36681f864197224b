package bgpconfig

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func validConfig() Config {
	return Config{
		ASN:      64512,
		RouterID: netip.MustParseAddr("198.18.1.10"),
		Peers: []Peer{
			{Address: netip.MustParseAddr("198.18.1.1"), ASN: 64500},
		},
		Routes: []Route{{VIP: netip.MustParseAddr("198.19.0.10")}},
	}
}

func TestValidate(t *testing.T) {
	u32 := func(v uint32) *uint32 { return &v }
	tests := []struct {
		name   string
		modify func(c *Config)
		want   []string // substrings of the joined error, in order; nil is valid
	}{
		{name: "valid", modify: func(c *Config) {}},
		{name: "valid full", modify: func(c *Config) {
			c.NextHopIPv6 = netip.MustParseAddr("fd00:1::10")
			c.Peers[0] = Peer{Address: netip.MustParseAddr("198.18.1.1"), ASN: 64500, Port: 1179,
				LocalAddress: netip.MustParseAddr("198.18.1.10"), Multihop: 3, Password: "s3cret",
				HoldTime: 9 * time.Second, Keepalive: 3 * time.Second, IPv4: true, IPv6: true,
				GracefulRestart: 120 * time.Second,
				BFD:             &BFD{Interval: 50 * time.Millisecond, Multiplier: 3, Multihop: true}}
			c.Routes = append(c.Routes, Route{VIP: netip.MustParseAddr("fd00:2::10"),
				Attributes: Attributes{Communities: []string{"64512:100"}, LargeCommunities: []string{"64512:1:2"},
					MED: u32(10), Prepend: 2}})
		}},
		{name: "asn zero", modify: func(c *Config) { c.ASN = 0 },
			want: []string{"asn: 0 is reserved (RFC 7607); want 1..4294967295"}},
		{name: "router id ipv6", modify: func(c *Config) { c.RouterID = netip.MustParseAddr("fd00::1") },
			want: []string{`router-id: "fd00::1" is not an IPv4 address`}},
		{name: "no peers", modify: func(c *Config) { c.Peers = nil },
			want: []string{"peers: none; want at least one peer"}},
		{name: "duplicate peer", modify: func(c *Config) { c.Peers = append(c.Peers, c.Peers[0]) },
			want: []string{"peers[1].address: 198.18.1.1 is also peers[0]"}},
		{name: "hold time too short", modify: func(c *Config) { c.Peers[0].HoldTime = 2 * time.Second },
			want: []string{"peers[0].hold-time: 2s; want 0 (default 90s) or whole seconds 3s..65535s"}},
		{name: "connect retry not whole seconds", modify: func(c *Config) { c.Peers[0].ConnectRetry = 1500 * time.Millisecond },
			want: []string{"peers[0].connect-retry: 1.5s; want 0 (default 1s) or whole seconds 1s..65535s"}},
		{name: "connect retry negative", modify: func(c *Config) { c.Peers[0].ConnectRetry = -time.Second },
			want: []string{"peers[0].connect-retry: -1s; want 0 (default 1s) or whole seconds 1s..65535s"}},
		{name: "keepalive not below hold", modify: func(c *Config) {
			c.Peers[0].HoldTime, c.Peers[0].Keepalive = 9*time.Second, 9*time.Second
		}, want: []string{"peers[0].keepalive: 9s; want 0 (a third of the hold time) or whole seconds below the hold time 9s"}},
		{name: "multihop on ibgp", modify: func(c *Config) { c.Peers[0].ASN, c.Peers[0].Multihop = 64512, 2 },
			want: []string{"peers[0].multihop: 2 is set on an iBGP peer"}},
		{name: "multihop out of range", modify: func(c *Config) { c.Peers[0].Multihop = 300 },
			want: []string{"peers[0].multihop: 300 is out of range; want 0 (directly connected) or a TTL 1..255"}},
		{name: "local address other family", modify: func(c *Config) { c.Peers[0].LocalAddress = netip.MustParseAddr("fd00::1") },
			want: []string{"peers[0].local-address: fd00::1 is not of the family of address 198.18.1.1"}},
		{name: "md5 key too long", modify: func(c *Config) { c.Peers[0].Password = strings.Repeat("x", 81) },
			want: []string{"peers[0].password: 81 bytes; TCP MD5 keys are at most 80 bytes"}},
		{name: "graceful restart too long", modify: func(c *Config) { c.Peers[0].GracefulRestart = 5000 * time.Second },
			want: []string{"peers[0].graceful-restart: 1h23m20s; want 0 (off) or whole seconds 1s..4095s"}},
		{name: "ipv6 over ipv4 session without next hop", modify: func(c *Config) { c.Peers[0].IPv6 = true },
			want: []string{"peers[0].ipv6: IPv6 routes over an IPv4 session need next-hop-ipv6, which is unset"}},
		{name: "ipv6 vip without an ipv6 peer", modify: func(c *Config) {
			c.Routes = append(c.Routes, Route{VIP: netip.MustParseAddr("fd00:2::10")})
		}, want: []string{"routes[1].vip: fd00:2::10 is IPv6 but no peer carries IPv6 unicast"}},
		{name: "bfd interval", modify: func(c *Config) {
			c.Peers[0].LocalAddress = netip.MustParseAddr("198.18.1.10")
			c.Peers[0].BFD = &BFD{Interval: time.Millisecond, Multiplier: 3}
		},
			want: []string{"peers[0].bfd.interval: 1ms; want whole milliseconds 10ms..60s"}},
		{name: "bfd without local address", modify: func(c *Config) {
			c.Peers[0].BFD = &BFD{Interval: 300 * time.Millisecond, Multiplier: 3}
		}, want: []string{"peers[0].local-address: unset; a peer with BFD needs the session's source address"}},
		{name: "bad community", modify: func(c *Config) { c.Routes[0].Communities = []string{"70000:1"} },
			want: []string{`routes[0].communities[0]: "70000:1" is not a community; want ASN:value, each 0..65535`}},
		{name: "bad large community", modify: func(c *Config) { c.Routes[0].LargeCommunities = []string{"1:2"} },
			want: []string{`routes[0].large-communities[0]: "1:2" is not a large community; want global:local1:local2`}},
		{name: "prepend with ibgp peer", modify: func(c *Config) {
			c.Peers[0].ASN = 64512
			c.Routes[0].Prepend = 2
		}, want: []string{"routes[0].prepend: 2 with an iBGP peer"}},
		{name: "demote by prepending over eBGP", modify: func(c *Config) { c.Demote = &Demotion{Prepend: 3} }},
		{name: "demote by local-pref and med over iBGP", modify: func(c *Config) {
			c.Peers[0].ASN = 64512
			c.Demote = &Demotion{LocalPref: u32(50), MED: u32(100)}
		}},
		{name: "demote prepend with ibgp peer", modify: func(c *Config) {
			c.Peers[0].ASN = 64512
			c.Demote = &Demotion{Prepend: 3, MED: u32(100)}
		}, want: []string{"demote.prepend: 3 with an iBGP peer"}},
		{name: "demote prepend out of range", modify: func(c *Config) { c.Demote = &Demotion{Prepend: 11} },
			want: []string{"demote.prepend: 11; want 0..10"}},
		{name: "demote prepend on top of the route's", modify: func(c *Config) {
			c.Routes[0].Prepend = 8
			c.Demote = &Demotion{Prepend: 3}
		}, want: []string{"demote.prepend: 3 on top of the prepend 8 of routes[0] (198.19.0.10) is 11; want at most 10 in all"}},
		{name: "demote that changes nothing", modify: func(c *Config) { c.Demote = &Demotion{} },
			want: []string{"demote: changes nothing an eBGP peer sees; want prepend (1..10) or med"}},
		{name: "demote local-pref without ibgp peer", modify: func(c *Config) { c.Demote = &Demotion{Prepend: 1, LocalPref: u32(50)} },
			want: []string{"demote.local-pref: 50, but every peer is eBGP"}},
		{name: "demote local-pref not below the route's", modify: func(c *Config) {
			c.Peers[0].ASN = 64512
			c.Demote = &Demotion{LocalPref: u32(100)}
		}, want: []string{"demote.local-pref: 100 is not below the local preference 100 of routes[0] (198.19.0.10)"}},
		{name: "demote med not above the route's", modify: func(c *Config) {
			c.Routes[0].MED = u32(200)
			c.Demote = &Demotion{MED: u32(100)}
		}, want: []string{"demote.med: 100 is not above the MED 200 of routes[0] (198.19.0.10)", "want 201..4294967295"}},
		{name: "duplicate vip", modify: func(c *Config) { c.Routes = append(c.Routes, c.Routes[0]) },
			want: []string{"routes[1].vip: 198.19.0.10 is also routes[0]"}},
		{name: "two errors", modify: func(c *Config) { c.ASN = 0; c.Peers[0].Port = 70000 },
			want: []string{"asn: 0 is reserved", "peers[0].port: 70000 is out of range; want 0 (179) or 1..65535"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.modify(&c)
			err := c.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate: nil, want %q", tt.want)
			}
			got := err.Error()
			for _, w := range tt.want {
				i := strings.Index(got, w)
				if i < 0 {
					t.Fatalf("Validate:\n%s\nwant it to contain %q", err, w)
				}
				got = got[i+len(w):]
			}
		})
	}
}

func TestParseCommunities(t *testing.T) {
	c, err := ParseCommunity("64512:100")
	if err != nil || c != 64512<<16|100 {
		t.Errorf("ParseCommunity(64512:100) = %#x, %v; want %#x", c, err, 64512<<16|100)
	}
	l, err := ParseLargeCommunity("4200000000:1:2")
	if err != nil || l != [3]uint32{4200000000, 1, 2} {
		t.Errorf("ParseLargeCommunity = %v, %v", l, err)
	}
}

// FuzzCommunities: whatever parses formats back to the same value.
func FuzzCommunities(f *testing.F) {
	for _, s := range []string{"64512:100", "0:0", "65535:65535", "4200000000:1:2", "1:2:3", "", ":", "70000:1", "1:2:3:4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if c, err := ParseCommunity(s); err == nil {
			back := fmt.Sprintf("%d:%d", c>>16, c&0xffff)
			if c2, err := ParseCommunity(back); err != nil || c2 != c {
				t.Fatalf("%q -> %#x -> %q -> %#x, %v", s, c, back, c2, err)
			}
		}
		if l, err := ParseLargeCommunity(s); err == nil {
			back := fmt.Sprintf("%d:%d:%d", l[0], l[1], l[2])
			if l2, err := ParseLargeCommunity(back); err != nil || l2 != l {
				t.Fatalf("%q -> %v -> %q -> %v, %v", s, l, back, l2, err)
			}
		}
	})
}

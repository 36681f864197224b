package vrrp

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	src4  = netip.MustParseAddr("198.18.0.11")
	peer4 = netip.MustParseAddr("198.18.0.12")
	vip4  = netip.MustParseAddr("198.18.0.10")
	vip4b = netip.MustParseAddr("198.18.0.20")
	src6  = netip.MustParseAddr("fe80::b")
	glob6 = netip.MustParseAddr("fd00:aa::11")
	vip6  = netip.MustParseAddr("fd00:aa::10")
	vip6b = netip.MustParseAddr("fd00:aa::20")
)

// addrCmp lets cmp compare netip.Addr, whose fields are unexported.
var addrCmp = cmp.Comparer(func(a, b netip.Addr) bool { return a == b })

// golden is a message whose wire bytes, checksum included, were computed
// independently of this package (by hand, with a few lines of Python) and,
// for the first and third, also match what keepalived 2.2.7 sends
// (/work/shared/PEER-FACTS.md and testdata/keepalived-*.bin).
type golden struct {
	name     string
	adv      Advertisement
	src, dst netip.Addr
	wire     string // hex, spaces ignored
}

var goldens = []golden{
	{
		name: "v2 IPv4 PASS auth (keepalived)",
		adv: Advertisement{
			Version: 2, VRID: 51, Priority: 100, Interval: time.Second,
			AuthType: AuthSimple, AuthData: Password("managed_api_vip"),
			Addresses: []netip.Addr{vip4}, Checksum: 0x0c26,
		},
		src: src4, dst: MulticastIPv4,
		wire: "21 33 64 01 01 01 0c26 c612000a 6d616e616765645f", // "managed_"
	},
	{
		name: "v2 IPv4 no auth",
		adv: Advertisement{
			Version: 2, VRID: 51, Priority: 100, Interval: time.Second,
			AuthType: AuthNone, Addresses: []netip.Addr{vip4}, Checksum: 0xb4ad,
		},
		src: src4, dst: MulticastIPv4,
		wire: "21 33 64 01 00 01 b4ad c612000a 0000000000000000",
	},
	{
		name: "v2 no addresses priority 0 max interval",
		adv: Advertisement{
			Version: 2, VRID: 255, Priority: 0, Interval: 255 * time.Second,
			AuthType: AuthNone, Checksum: 0xdd01,
		},
		src: src4, dst: MulticastIPv4,
		wire: "21 ff 00 00 00 ff dd01 0000000000000000",
	},
	{
		name: "v3 IPv4 (keepalived)",
		adv: Advertisement{
			Version: 3, VRID: 51, Priority: 100, Interval: 100 * time.Millisecond,
			Addresses: []netip.Addr{vip4}, Checksum: 0xfdf7,
		},
		src: src4, dst: MulticastIPv4,
		wire: "31 33 64 01 000a fdf7 c612000a",
	},
	{
		name: "v3 IPv4 unicast owner max interval two addresses",
		adv: Advertisement{
			Version: 3, VRID: 1, Priority: 255, Interval: 40950 * time.Millisecond,
			Addresses: []netip.Addr{vip4, vip4b}, Checksum: 0xa6fc,
		},
		src: src4, dst: peer4,
		wire: "31 01 ff 02 0fff a6fc c612000a c6120014",
	},
	{
		name: "v3 IPv6 link-local to ff02::12",
		adv: Advertisement{
			Version: 3, VRID: 51, Priority: 100, Interval: time.Second,
			Addresses: []netip.Addr{vip6}, Checksum: 0x6e83,
		},
		src: src6, dst: MulticastIPv6,
		wire: "31 33 64 01 0064 6e83 fd0000aa000000000000000000000010",
	},
	{
		name: "v3 IPv6 two addresses priority 0 min interval",
		adv: Advertisement{
			Version: 3, VRID: 200, Priority: 0, Interval: 10 * time.Millisecond,
			Addresses: []netip.Addr{vip6, vip6b}, Checksum: 0xd47f,
		},
		src: netip.MustParseAddr("fe80::1"), dst: MulticastIPv6,
		wire: "31 c8 00 02 0001 d47f fd0000aa000000000000000000000010 fd0000aa000000000000000000000020",
	},
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// withChecksum returns a copy of b with the checksum field set to the one
// the version in b calls for, so that a test case gets past the checksum
// check and fails (or not) on what it is about.
func withChecksum(b []byte, src, dst netip.Addr) []byte {
	b = append([]byte(nil), b...)
	binary.BigEndian.PutUint16(b[6:], checksum(int(b[0]>>4), b, src.Unmap(), dst.Unmap()))
	return b
}

func TestMarshalGolden(t *testing.T) {
	for _, tt := range goldens {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.adv
			a.Checksum = 0x5555 // Marshal must ignore and overwrite it
			got, err := a.Marshal(tt.src, tt.dst)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if diff := cmp.Diff(mustHex(t, tt.wire), got); diff != "" {
				t.Errorf("Marshal bytes (-want +got):\n%s", diff)
			}
			if a.Checksum != tt.adv.Checksum {
				t.Errorf("Marshal set Checksum %#04x, want %#04x", a.Checksum, tt.adv.Checksum)
			}
		})
	}
}

func TestUnmarshalGolden(t *testing.T) {
	for _, tt := range goldens {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Unmarshal(mustHex(t, tt.wire), tt.src, tt.dst)
			if err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if diff := cmp.Diff(&tt.adv, got, addrCmp); diff != "" {
				t.Errorf("Unmarshal (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUnmarshalAccepts covers inputs that decode although Marshal would not
// write them byte for byte, or that use unusual but valid address forms.
func TestUnmarshalAccepts(t *testing.T) {
	v3 := mustHex(t, "31 33 64 01 000a 0000 c612000a")
	rsvd := append([]byte(nil), v3...)
	rsvd[4] |= 0xf0
	noneWithData := mustHex(t, "21 33 64 01 00 01 0000 c612000a 0102030405060708")
	mapped := func(a netip.Addr) netip.Addr { return netip.AddrFrom16(a.As16()) }

	tests := []struct {
		name      string
		wire      []byte
		src, dst  netip.Addr
		want      Advertisement
		remarshal []byte // what Marshal writes back; nil means the input
	}{
		{
			name: "v3 reserved bits are ignored",
			wire: withChecksum(rsvd, src4, MulticastIPv4), src: src4, dst: MulticastIPv4,
			want: Advertisement{Version: 3, VRID: 51, Priority: 100, Interval: 100 * time.Millisecond,
				Addresses: []netip.Addr{vip4}, Checksum: 0x0df7},
			remarshal: withChecksum(v3, src4, MulticastIPv4),
		},
		{
			name: "v2 auth data kept with auth none",
			wire: withChecksum(noneWithData, src4, MulticastIPv4), src: src4, dst: MulticastIPv4,
			want: Advertisement{Version: 2, VRID: 51, Priority: 100, Interval: time.Second,
				AuthData: [8]byte{1, 2, 3, 4, 5, 6, 7, 8}, Addresses: []netip.Addr{vip4}, Checksum: 0xa499},
		},
		{
			name: "IPv4-mapped src and dst are IPv4",
			wire: withChecksum(v3, src4, MulticastIPv4), src: mapped(src4), dst: mapped(MulticastIPv4),
			want: Advertisement{Version: 3, VRID: 51, Priority: 100, Interval: 100 * time.Millisecond,
				Addresses: []netip.Addr{vip4}, Checksum: 0xfdf7},
		},
		{
			name: "v3 IPv4 unicast to a peer",
			wire: withChecksum(v3, src4, peer4), src: src4, dst: peer4,
			want: Advertisement{Version: 3, VRID: 51, Priority: 100, Interval: 100 * time.Millisecond,
				Addresses: []netip.Addr{vip4}, Checksum: 0x17ec},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Unmarshal(tt.wire, tt.src, tt.dst)
			if err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if diff := cmp.Diff(&tt.want, got, addrCmp); diff != "" {
				t.Errorf("Unmarshal (-want +got):\n%s", diff)
			}
			out, err := got.Marshal(tt.src, tt.dst)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			want := tt.remarshal
			if want == nil {
				want = tt.wire
			}
			if diff := cmp.Diff(want, out); diff != "" {
				t.Errorf("Marshal of the result (-want +got):\n%s", diff)
			}
		})
	}
}

// rejectCase is a message Unmarshal must reject for the given reason.
type rejectCase struct {
	name       string
	wire       []byte
	src, dst   netip.Addr
	want       Reason
	wantDetail string // must appear in Error()
}

// rejectCases returns one or more cases for every Reason. FuzzUnmarshal
// uses them as seeds too.
func rejectCases(t testing.TB) []rejectCase {
	v2 := mustHex(t, goldens[0].wire)  // v2 PASS, 1 address
	v3 := mustHex(t, goldens[3].wire)  // v3 IPv4, 1 address
	v36 := mustHex(t, goldens[5].wire) // v3 IPv6 from fe80::b, 1 address
	edit := func(b []byte, f func(b []byte) []byte) []byte { return f(append([]byte(nil), b...)) }
	set := func(b []byte, i int, v byte) []byte { return edit(b, func(b []byte) []byte { b[i] = v; return b }) }

	// A v2 message whose correct checksum is 0x0000: the last two auth
	// bytes are chosen to make the sum of the rest 0xffff. Writing 0xffff,
	// the other encoding of zero, must be rejected.
	zeroSum := edit(v2, func(b []byte) []byte {
		b[18], b[19] = 0, 0
		binary.BigEndian.PutUint16(b[18:], checksum(2, b, src4, MulticastIPv4))
		b[6], b[7] = 0xff, 0xff
		return b
	})
	if c := checksum(2, zeroSum, src4, MulticastIPv4); c != 0 {
		t.Fatalf("test setup: zeroSum checksum %#04x, want 0", c)
	}

	return []rejectCase{
		{name: "empty", wire: nil, src: src4, dst: MulticastIPv4, want: ReasonShort, wantDetail: "packet of 0 bytes"},
		{name: "7 bytes", wire: v3[:7], src: src4, dst: MulticastIPv4, want: ReasonShort, wantDetail: "packet of 7 bytes"},
		{name: "v2 without auth data", wire: v2[:12], src: src4, dst: MulticastIPv4, want: ReasonShort, wantDetail: "VRRPv2 packet of 12 bytes"},

		{name: "version 1", wire: set(v3, 0, 0x11), src: src4, dst: MulticastIPv4, want: ReasonVersion, wantDetail: "version 1:"},
		{name: "version 4", wire: set(v3, 0, 0x41), src: src4, dst: MulticastIPv4, want: ReasonVersion, wantDetail: "version 4:"},
		{name: "type 0", wire: set(v3, 0, 0x30), src: src4, dst: MulticastIPv4, want: ReasonType, wantDetail: "type 0:"},
		{name: "type 2", wire: set(v2, 0, 0x22), src: src4, dst: MulticastIPv4, want: ReasonType, wantDetail: "type 2:"},

		{name: "v2 over IPv6", wire: withChecksum(set(v36, 0, 0x21), src6, MulticastIPv6), src: src6, dst: MulticastIPv6,
			want: ReasonFamily, wantDetail: "VRRPv2 over IPv6"},
		{name: "src IPv4 dst IPv6", wire: v3, src: src4, dst: MulticastIPv6, want: ReasonFamily, wantDetail: "to ff02::12"},
		{name: "invalid src", wire: v3, src: netip.Addr{}, dst: MulticastIPv4, want: ReasonFamily, wantDetail: "from invalid IP"},

		{name: "v3 IPv6 from global address", wire: withChecksum(v36, glob6, MulticastIPv6), src: glob6, dst: MulticastIPv6,
			want: ReasonSource, wantDetail: "link-local (RFC 5798 section 5.1.2.1) from fd00:aa::11"},

		{name: "count 2 with one address", wire: withChecksum(set(v3, 3, 2), src4, MulticastIPv4), src: src4, dst: MulticastIPv4,
			want: ReasonLength, wantDetail: "2 IPv4 addresses need 16 bytes, got 12"},
		{name: "trailing bytes", wire: withChecksum(append(v3, 0, 0, 0, 0), src4, MulticastIPv4), src: src4, dst: MulticastIPv4,
			want: ReasonLength, wantDetail: "1 IPv4 addresses need 12 bytes, got 16"},
		{name: "v2 count 0 with an address", wire: withChecksum(set(v2, 3, 0), src4, MulticastIPv4), src: src4, dst: MulticastIPv4,
			want: ReasonLength, wantDetail: "0 IPv4 addresses need 16 bytes, got 20"},
		{name: "v3 IPv6 with an IPv4-sized address", wire: withChecksum(v3, src6, MulticastIPv6), src: src6, dst: MulticastIPv6,
			want: ReasonLength, wantDetail: "1 IPv6 addresses need 24 bytes, got 12"},

		{name: "checksum off by one", wire: set(v2, 7, 0x27), src: src4, dst: MulticastIPv4,
			want: ReasonChecksum, wantDetail: "bad checksum 0x0c27 (want 0x0c26) from 198.18.0.11"},
		{name: "v3 checksummed like v2", wire: edit(v3, func(b []byte) []byte {
			binary.BigEndian.PutUint16(b[6:], checksum(2, b, src4, MulticastIPv4))
			return b
		}), src: src4, dst: MulticastIPv4, want: ReasonChecksum, wantDetail: "(want 0xfdf7)"},
		{name: "v3 unicast checksummed with the multicast group", wire: v3, src: src4, dst: peer4,
			want: ReasonChecksum, wantDetail: "bad checksum 0xfdf7"},
		{name: "v3 IPv6 checksum for another source", wire: v36, src: netip.MustParseAddr("fe80::c"), dst: MulticastIPv6,
			want: ReasonChecksum, wantDetail: "bad checksum 0x6e83"},
		{name: "0xffff for a zero checksum", wire: zeroSum, src: src4, dst: MulticastIPv4,
			want: ReasonChecksum, wantDetail: "bad checksum 0xffff (want 0x0000)"},

		{name: "v2 auth type 2 (AH)", wire: withChecksum(set(v2, 4, 2), src4, MulticastIPv4), src: src4, dst: MulticastIPv4,
			want: ReasonAuthType, wantDetail: "auth type 2:"},
		{name: "v2 auth type 255", wire: withChecksum(set(v2, 4, 255), src4, MulticastIPv4), src: src4, dst: MulticastIPv4,
			want: ReasonAuthType, wantDetail: "auth type 255:"},

		{name: "v2 interval 0", wire: withChecksum(set(v2, 5, 0), src4, MulticastIPv4), src: src4, dst: MulticastIPv4,
			want: ReasonInterval, wantDetail: "interval 0"},
		{name: "v3 interval 0 under reserved bits", wire: withChecksum(edit(v3, func(b []byte) []byte { b[4], b[5] = 0xf0, 0; return b }), src4, MulticastIPv4),
			src: src4, dst: MulticastIPv4, want: ReasonInterval, wantDetail: "interval 0"},
	}
}

func TestUnmarshalRejects(t *testing.T) {
	seen := map[Reason]bool{}
	for _, tt := range rejectCases(t) {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]byte(nil), tt.wire...)
			a, err := Unmarshal(tt.wire, tt.src, tt.dst)
			if err == nil {
				t.Fatalf("Unmarshal accepted it: %v", a)
			}
			if a != nil {
				t.Errorf("Unmarshal returned %v with error", a)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v is not a *ParseError", err, err)
			}
			if diff := cmp.Diff(tt.want, pe.Reason); diff != "" {
				t.Errorf("Reason (-want +got):\n%s\nerror: %v", diff, err)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "vrrp: ") || !strings.Contains(msg, tt.wantDetail) {
				t.Errorf("Error() = %q, want prefix \"vrrp: \" and %q", msg, tt.wantDetail)
			}
			if diff := cmp.Diff(in, tt.wire); diff != "" {
				t.Errorf("Unmarshal modified its input (-before +after):\n%s", diff)
			}
		})
		seen[tt.want] = true
	}
	for _, r := range []Reason{ReasonShort, ReasonVersion, ReasonType, ReasonChecksum, ReasonLength,
		ReasonAuthType, ReasonInterval, ReasonFamily, ReasonSource} {
		if !seen[r] {
			t.Errorf("no test case for %s", r)
		}
	}
}

func TestMarshalRejects(t *testing.T) {
	v2 := func(f func(a *Advertisement)) Advertisement {
		a := Advertisement{Version: 2, VRID: 51, Priority: 100, Interval: time.Second, Addresses: []netip.Addr{vip4}}
		f(&a)
		return a
	}
	v3 := func(f func(a *Advertisement)) Advertisement {
		a := Advertisement{Version: 3, VRID: 51, Priority: 100, Interval: time.Second, Addresses: []netip.Addr{vip4}}
		f(&a)
		return a
	}
	many := make([]netip.Addr, 256)
	for i := range many {
		many[i] = netip.AddrFrom4([4]byte{198, 18, 1, byte(i)})
	}
	tests := []struct {
		name     string
		adv      Advertisement
		src, dst netip.Addr
		want     string // must appear in the error
	}{
		{name: "version 4", adv: v3(func(a *Advertisement) { a.Version = 4 }), src: src4, dst: MulticastIPv4, want: "Version 4: want 2 or 3"},
		{name: "version 0", adv: v3(func(a *Advertisement) { a.Version = 0 }), src: src4, dst: MulticastIPv4, want: "Version 0:"},
		{name: "v2 over IPv6", adv: v2(func(a *Advertisement) { a.Addresses = []netip.Addr{vip6} }), src: src6, dst: MulticastIPv6, want: "Version 2: VRRPv2 is IPv4 only"},
		{name: "v2 fractional interval", adv: v2(func(a *Advertisement) { a.Interval = 1500 * time.Millisecond }), src: src4, dst: MulticastIPv4, want: "Interval 1.5s:"},
		{name: "v2 zero interval", adv: v2(func(a *Advertisement) { a.Interval = 0 }), src: src4, dst: MulticastIPv4, want: "Interval 0s:"},
		{name: "v2 interval 256s", adv: v2(func(a *Advertisement) { a.Interval = 256 * time.Second }), src: src4, dst: MulticastIPv4, want: "Interval 4m16s:"},
		{name: "v2 negative interval", adv: v2(func(a *Advertisement) { a.Interval = -time.Second }), src: src4, dst: MulticastIPv4, want: "Interval -1s:"},
		{name: "v2 auth type AH", adv: v2(func(a *Advertisement) { a.AuthType = 2 }), src: src4, dst: MulticastIPv4, want: "AuthType 2:"},
		{name: "v3 interval 15ms", adv: v3(func(a *Advertisement) { a.Interval = 15 * time.Millisecond }), src: src4, dst: MulticastIPv4, want: "Interval 15ms:"},
		{name: "v3 interval 41s", adv: v3(func(a *Advertisement) { a.Interval = 41 * time.Second }), src: src4, dst: MulticastIPv4, want: "Interval 41s:"},
		{name: "v3 zero interval", adv: v3(func(a *Advertisement) { a.Interval = 0 }), src: src4, dst: MulticastIPv4, want: "Interval 0s:"},
		{name: "v3 with auth type", adv: v3(func(a *Advertisement) { a.AuthType = AuthSimple }), src: src4, dst: MulticastIPv4, want: "AuthType 1:"},
		{name: "v3 with auth data", adv: v3(func(a *Advertisement) { a.AuthData = Password("x") }), src: src4, dst: MulticastIPv4, want: "AuthData non-zero:"},
		{name: "v3 IPv6 from global address", adv: v3(func(a *Advertisement) { a.Addresses = []netip.Addr{vip6} }), src: glob6, dst: MulticastIPv6, want: "src fd00:aa::11:"},
		{name: "src and dst families differ", adv: v3(func(*Advertisement) {}), src: src4, dst: MulticastIPv6, want: "src 198.18.0.11 and dst ff02::12:"},
		{name: "invalid dst", adv: v3(func(*Advertisement) {}), src: src4, dst: netip.Addr{}, want: "dst invalid IP:"},
		{name: "256 addresses", adv: v3(func(a *Advertisement) { a.Addresses = many }), src: src4, dst: MulticastIPv4, want: "Addresses (256 addresses): at most 255"},
		{name: "IPv6 address over IPv4", adv: v3(func(a *Advertisement) { a.Addresses = []netip.Addr{vip4, vip6} }), src: src4, dst: MulticastIPv4, want: "Addresses[1] fd00:aa::10: want an IPv4 address"},
		{name: "IPv4 address over IPv6", adv: v3(func(*Advertisement) {}), src: src6, dst: MulticastIPv6, want: "Addresses[0] 198.18.0.10: want an IPv6 address"},
		{name: "zoned address", adv: v3(func(a *Advertisement) { a.Addresses = []netip.Addr{netip.MustParseAddr("fe80::1%eth0")} }), src: src6, dst: MulticastIPv6, want: "Addresses[0] fe80::1%eth0:"},
		{name: "invalid address", adv: v2(func(a *Advertisement) { a.Addresses = []netip.Addr{{}} }), src: src4, dst: MulticastIPv4, want: "Addresses[0] invalid IP:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.adv
			a.Checksum = 0x1234
			b, err := a.Marshal(tt.src, tt.dst)
			if err == nil {
				t.Fatalf("Marshal accepted it: % x", b)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "vrrp: marshal: ") || !strings.Contains(msg, tt.want) {
				t.Errorf("error %q, want prefix \"vrrp: marshal: \" and %q", msg, tt.want)
			}
			if a.Checksum != 0x1234 {
				t.Errorf("failed Marshal changed Checksum to %#04x", a.Checksum)
			}
		})
	}
}

func TestMarshalAcceptsMappedIPv6Address(t *testing.T) {
	// A 16-byte address that happens to be IPv4-mapped is valid in a v3
	// IPv6 message, and Unmarshal gives it back in the same form.
	mapped := netip.AddrFrom16(vip4.As16())
	a := Advertisement{Version: 3, VRID: 1, Priority: 1, Interval: time.Second, Addresses: []netip.Addr{mapped}}
	b, err := a.Marshal(src6, MulticastIPv6)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	got, err := Unmarshal(b, src6, MulticastIPv6)
	if err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if diff := cmp.Diff(&a, got, addrCmp); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestReasonOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want Reason
	}{
		{name: "nil", err: nil, want: ""},
		{name: "ParseError", err: &ParseError{Reason: ReasonChecksum}, want: ReasonChecksum},
		{name: "wrapped", err: fmt.Errorf("receive on eth0: %w", &ParseError{Reason: ReasonSource}), want: ReasonSource},
		{name: "other", err: errors.New("boom"), want: ReasonMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ReasonOf(tt.err)); diff != "" {
				t.Errorf("ReasonOf (-want +got):\n%s", diff)
			}
		})
	}
	_, err := Unmarshal([]byte{0x31}, src4, MulticastIPv4)
	if got := ReasonOf(err); got != ReasonShort {
		t.Errorf("ReasonOf(Unmarshal error) = %q, want %q", got, ReasonShort)
	}
}

func TestParseErrorString(t *testing.T) {
	e := &ParseError{Reason: ReasonChecksum, Detail: "bad checksum 0x1234 (want 0xabcd) from 198.18.0.11"}
	if got, want := e.Error(), "vrrp: bad checksum 0x1234 (want 0xabcd) from 198.18.0.11"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestPassword(t *testing.T) {
	tests := []struct {
		in   string
		want [8]byte
	}{
		{in: "managed_api_vip", want: [8]byte{'m', 'a', 'n', 'a', 'g', 'e', 'd', '_'}},
		{in: "12345678", want: [8]byte{'1', '2', '3', '4', '5', '6', '7', '8'}},
		{in: "abc", want: [8]byte{'a', 'b', 'c'}},
		{in: "", want: [8]byte{}},
		{in: "pässwörd", want: [8]byte{'p', 0xc3, 0xa4, 's', 's', 'w', 0xc3, 0xb6}}, // bytes, not runes
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Password(tt.in)); diff != "" {
				t.Errorf("Password(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestSameAddresses(t *testing.T) {
	tests := []struct {
		name string
		a, b []netip.Addr
		want bool
	}{
		{name: "both empty", a: nil, b: []netip.Addr{}, want: true},
		{name: "equal", a: []netip.Addr{vip4, vip4b}, b: []netip.Addr{vip4, vip4b}, want: true},
		{name: "reordered", a: []netip.Addr{vip4, vip4b}, b: []netip.Addr{vip4b, vip4}, want: true},
		{name: "repeated", a: []netip.Addr{vip4, vip4}, b: []netip.Addr{vip4}, want: true},
		{name: "missing", a: []netip.Addr{vip4, vip4b}, b: []netip.Addr{vip4}, want: false},
		{name: "extra", a: []netip.Addr{vip4}, b: []netip.Addr{vip4, vip4b}, want: false},
		{name: "different", a: []netip.Addr{vip4}, b: []netip.Addr{vip4b}, want: false},
		{name: "empty vs one", a: nil, b: []netip.Addr{vip6}, want: false},
		{name: "IPv4-mapped differs", a: []netip.Addr{vip4}, b: []netip.Addr{netip.AddrFrom16(vip4.As16())}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SameAddresses(tt.a, tt.b); got != tt.want {
				t.Errorf("SameAddresses(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		adv  Advertisement
		want string
	}{
		{adv: goldens[0].adv, want: "v2 vrid 51 prio 100 int 1s auth simple addrs [198.18.0.10]"},
		{adv: goldens[1].adv, want: "v2 vrid 51 prio 100 int 1s auth none addrs [198.18.0.10]"},
		{adv: goldens[3].adv, want: "v3 vrid 51 prio 100 int 100ms addrs [198.18.0.10]"},
		{adv: goldens[6].adv, want: "v3 vrid 200 prio 0 int 10ms addrs [fd00:aa::10 fd00:aa::20]"},
		{adv: Advertisement{Version: 2, AuthType: 7}, want: "v2 vrid 0 prio 0 int 0s auth 7 addrs []"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.adv.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

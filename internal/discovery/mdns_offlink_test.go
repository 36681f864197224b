package discovery

import (
	"net/netip"
	"testing"
)

// TestFromOffLink: which datagrams RFC 6762 section 11 has us drop, given
// the prefixes of the interface they came in on.
func TestFromOffLink(t *testing.T) {
	prefixes := []netip.Prefix{
		netip.MustParsePrefix("198.18.0.11/24"),
		netip.MustParsePrefix("198.18.0.200/32"), // a VIP
		netip.MustParsePrefix("fd00:bb::b/64"),
		netip.MustParsePrefix("fe80::1/64"),
	}
	for _, tt := range []struct {
		name     string
		src, dst string
		want     bool
	}{
		{name: "to the IPv4 group from off-link", src: "203.0.113.5", dst: "224.0.0.251", want: false},
		{name: "to the IPv6 group from off-link", src: "2001:db8::5", dst: "ff02::fb", want: false},
		{name: "unicast from the subnet", src: "198.18.0.12", dst: "198.18.0.11", want: false},
		{name: "unicast from off-link", src: "198.18.7.2", dst: "198.18.0.11", want: true},
		{name: "unicast from an IPv4-mapped off-link source", src: "::ffff:198.18.7.2", dst: "198.18.0.11", want: true},
		{name: "unicast from an IPv4-mapped on-link source", src: "::ffff:198.18.0.12", dst: "198.18.0.11", want: false},
		{name: "unicast from our VIP", src: "198.18.0.200", dst: "198.18.0.11", want: false},
		{name: "unicast from IPv4 link-local", src: "169.254.3.4", dst: "198.18.0.11", want: false},
		{name: "unicast from the IPv6 prefix", src: "fd00:bb::c", dst: "fd00:bb::b", want: false},
		{name: "unicast from off-link IPv6", src: "fd00:77::2", dst: "fd00:bb::b", want: true},
		{name: "unicast from IPv6 link-local with a zone", src: "fe80::99%eth0", dst: "fd00:bb::b", want: false},
		{name: "destination unknown", src: "198.18.7.2", dst: "", want: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var dst netip.Addr
			if tt.dst != "" {
				dst = netip.MustParseAddr(tt.dst)
			}
			if got := fromOffLink(netip.MustParseAddr(tt.src), dst, prefixes); got != tt.want {
				t.Errorf("fromOffLink(%s, %q) = %v, want %v", tt.src, tt.dst, got, tt.want)
			}
		})
	}
	if !fromOffLink(netip.MustParseAddr("198.18.0.12"), netip.MustParseAddr("198.18.0.11"), nil) {
		t.Error("an interface without addresses has no subnet: a unicast datagram to it from a global address is off-link")
	}
}

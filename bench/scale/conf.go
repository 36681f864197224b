package main

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/vipstack/vipstack/internal/keepalived"
)

// vridsPerLink is how many instances share one interface (VRIDs 1..250).
const vridsPerLink = 250

// vipBase is the first VIP; the rest follow it.
var vipBase = netip.MustParseAddr("198.19.0.1")

// links is the number of interfaces that instances need.
func links(instances int) int { return (instances + vridsPerLink - 1) / vridsPerLink }

// linkName is the interface of link i (one end of a veth pair).
func linkName(i int) string { return fmt.Sprintf("sc%d", i) }

// linkAddr is the node's own address on link i.
func linkAddr(i int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, byte(10 + i), 1}), 24)
}

// conf is the keepalived.conf both implementations run: instances VRRPv2
// instances at advert 1 s, priority 100, vips addresses shared out in
// order (the first vips % instances instances take one more).
func conf(instances, vips int) (string, error) {
	if instances < 1 || instances > 250*vridsPerLink {
		return "", fmt.Errorf("-instances %d: want 1..%d", instances, 250*vridsPerLink)
	}
	if vips < instances || vips > 60000 {
		return "", fmt.Errorf("-vips %d: want at least one per instance (%d) and at most 60000", vips, instances)
	}
	c := keepalived.NewConfig()
	c.Global.RouterID, c.Global.VRRPVersion = "scale", 2
	a := vipBase
	for i := range instances {
		in := c.NewInstance(fmt.Sprintf("VI_%d", i+1))
		in.Interface, in.VRID = linkName(i/vridsPerLink), uint8(i%vridsPerLink+1)
		in.Priority, in.AdvertInterval, in.Version = 100, time.Second, 2
		n := vips / instances
		if i < vips%instances {
			n++
		}
		for range n {
			in.VIPs = append(in.VIPs, keepalived.VIP{Prefix: netip.PrefixFrom(a, 32)})
			a = a.Next()
		}
		c.Instances = append(c.Instances, in)
	}
	return string(keepalived.Format(c)), nil
}

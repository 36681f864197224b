package ipfailover

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// maxRouteLookups bounds the networks RouteInterface looks up.
const maxRouteLookups = 256

// RouteInterface returns the interface the VIPs belong on: the one a VIP is
// already configured on, else the one the kernel's route lookup towards it
// picks (`ip route get VIP`), which is the interface of the VIPs' subnet
// when one is on-link, and the default route's otherwise (the image looks
// up 8.8.8.8 and so always gets the default route's). One address per /24
// (IPv4) or /64 (IPv6) is looked up; VIPs that route to different
// interfaces are an error, since one pool runs on one interface.
func RouteInterface(vips []netip.Addr) (string, error) {
	held, err := heldOn()
	if err != nil {
		return "", err
	}
	seen := map[netip.Prefix]bool{}
	byIface := map[string][]netip.Addr{}
	var order []string
	for _, a := range vips {
		bits := 24
		if a.Is6() {
			bits = 64
		}
		net := netip.PrefixFrom(a, bits).Masked()
		if seen[net] {
			continue
		}
		if len(seen) == maxRouteLookups {
			break
		}
		seen[net] = true
		name, ok := held[a]
		if !ok {
			if name, err = routeTo("VIP", a); err != nil {
				return "", err
			}
		}
		if _, ok := byIface[name]; !ok {
			order = append(order, name)
		}
		byIface[name] = append(byIface[name], a)
	}
	if len(order) > 1 {
		var parts []string
		for _, n := range order {
			parts = append(parts, fmt.Sprintf("%s via %s", byIface[n][0], n))
		}
		return "", &ConfigError{fmt.Errorf("the VIPs route to different interfaces (%s): one pool runs on one interface; set %s", strings.Join(parts, ", "), EnvInterface)}
	}
	return order[0], nil
}

// routeTo asks the kernel which interface a packet to a (what: a VIP, a
// BGP peer) would leave by.
func routeTo(what string, a netip.Addr) (string, error) {
	routes, err := netlink.RouteGet(net.IP(a.AsSlice()))
	if err != nil {
		return "", fmt.Errorf("route lookup towards %s %s: %w; set %s to the interface the VIPs belong on", what, a, err, EnvInterface)
	}
	for _, r := range routes {
		if r.LinkIndex == 0 {
			continue
		}
		l, err := netlink.LinkByIndex(r.LinkIndex)
		if err != nil {
			return "", fmt.Errorf("route lookup towards %s %s: interface %d: %w", what, a, r.LinkIndex, err)
		}
		if l.Attrs().Flags&net.FlagLoopback != 0 {
			continue
		}
		return l.Attrs().Name, nil
	}
	return "", fmt.Errorf("route lookup towards %s %s found no interface; set %s", what, a, EnvInterface)
}

// heldOn maps every address configured on a non-loopback interface to it.
func heldOn() (map[netip.Addr]string, error) {
	var links []netlink.Link
	err := retryDump(func() (err error) { links, err = netlink.LinkList(); return err })
	if err != nil {
		return nil, fmt.Errorf("list interfaces: %w", err)
	}
	out := map[netip.Addr]string{}
	for _, l := range links {
		if l.Attrs().Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := addrList(l, netlink.FAMILY_ALL)
		if err != nil {
			return nil, fmt.Errorf("addresses of %s: %w", l.Attrs().Name, err)
		}
		for _, ad := range addrs {
			if a, ok := netip.AddrFromSlice(ad.IP); ok {
				out[a.Unmap()] = l.Attrs().Name
			}
		}
	}
	return out, nil
}

// NodeAddress returns the node's own address on iface in the VIPs' family,
// not one of the VIPs: the first IPv4 address (keepalived's primary
// address), or the first global IPv6 address, else the link-local one.
// Addresses of full length (/32, /128) come last: that is how VIPs are
// added, and one of another pool or instance that this node holds now
// would move away with it. A VIP that is on iface with a shorter length is
// the node's own address, listed by mistake: an error naming it.
func NodeAddress(iface string, family int, vips []netip.Addr) (netip.Addr, error) {
	l, err := netlink.LinkByName(iface)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return netip.Addr{}, fmt.Errorf("interface %q does not exist", iface)
		}
		return netip.Addr{}, fmt.Errorf("interface %q: %w", iface, err)
	}
	fam := netlink.FAMILY_V4
	if family == 6 {
		fam = netlink.FAMILY_V6
	}
	addrs, err := addrList(l, fam)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("addresses of %s: %w", iface, err)
	}
	var own, hostLen, linkLocal netip.Addr
	for _, ad := range addrs {
		a, ok := netip.AddrFromSlice(ad.IP)
		if !ok || ad.Flags&(unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED) != 0 {
			continue
		}
		a = a.Unmap()
		ones, bits := ad.Mask.Size()
		if slices.Contains(vips, a) {
			if ones < bits && !a.IsLinkLocalUnicast() {
				return netip.Addr{}, fmt.Errorf("%s: %s is this node's own address on %s (%s/%d), not a virtual IP; "+
					"accepted: addresses that no node has as its own", EnvVirtualIPs, a, iface, a, ones)
			}
			continue
		}
		switch {
		case a.IsLinkLocalUnicast():
			if !linkLocal.IsValid() {
				linkLocal = a.WithZone(iface)
			}
		case ones == bits:
			if !hostLen.IsValid() {
				hostLen = a
			}
		default:
			if !own.IsValid() {
				own = a
			}
		}
	}
	for _, a := range []netip.Addr{own, hostLen, linkLocal} {
		if a.IsValid() {
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("no IPv%d address on %s besides the VIPs: the node needs one to send VRRP from", family, iface)
}

// addrList lists l's addresses, retrying a dump the kernel interrupted
// (addresses changed meanwhile, as they do while VIPs move).
func addrList(l netlink.Link, family int) ([]netlink.Addr, error) {
	var out []netlink.Addr
	err := retryDump(func() (err error) { out, err = netlink.AddrList(l, family); return err })
	return out, err
}

func retryDump(f func() error) error {
	var err error
	for range 10 {
		if err = f(); !errors.Is(err, netlink.ErrDumpInterrupted) {
			return err
		}
	}
	return err
}

// PeerAddress returns the node's address on iface that is one of peers, if
// any: in unicast mode the peer list names each node by one address, which
// need not be the first on the interface.
func PeerAddress(iface string, peers []netip.Addr) (netip.Addr, bool) {
	l, err := netlink.LinkByName(iface)
	if err != nil {
		return netip.Addr{}, false
	}
	addrs, err := addrList(l, netlink.FAMILY_ALL)
	if err != nil {
		return netip.Addr{}, false
	}
	for _, ad := range addrs {
		if a, ok := netip.AddrFromSlice(ad.IP); ok && slices.Contains(peers, a.Unmap()) {
			return a.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// RemoveLeftovers removes from iface the pool's VIPs configured there as
// VIPs (full length, /32 or /128), before the engine starts: no other
// process holds this pool's VIPs on this node, so they are what an earlier
// run left, one whose ledger is gone with the container that crashed.
// keepalived does the same at start ("(VI_1) removing VIPs."); without it a
// node that restarts as backup or in fault keeps VIPs the others hold. An
// address of the pool with a shorter prefix (a node address listed as a
// VIP by mistake) is left alone.
func RemoveLeftovers(iface string, vips []netip.Addr) ([]netip.Prefix, error) {
	l, err := netlink.LinkByName(iface)
	if err != nil {
		return nil, fmt.Errorf("remove VIPs left on %s: %w", iface, err)
	}
	addrs, err := addrList(l, netlink.FAMILY_ALL)
	if err != nil {
		return nil, fmt.Errorf("remove VIPs left on %s: %w", iface, err)
	}
	want := make(map[netip.Addr]bool, len(vips))
	for _, a := range vips {
		want[a] = true
	}
	var removed []netip.Prefix
	for _, ad := range addrs {
		a, ok := netip.AddrFromSlice(ad.IP)
		ones, bits := ad.Mask.Size()
		if !ok || !want[a.Unmap()] || ones != bits {
			continue
		}
		if err := netlink.AddrDel(l, &ad); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
			return removed, fmt.Errorf("remove VIP %s left on %s: %w", a.Unmap(), iface, err)
		}
		removed = append(removed, netip.PrefixFrom(a.Unmap(), ones))
	}
	return removed, nil
}

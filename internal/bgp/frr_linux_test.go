//go:build linux

package bgp

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

const md5Password = "vipstack-md5"

// frrConf is bgpd's configuration for the lab's nodes: ECMP over up to 8
// paths in both families, BFD on the nodes listed in bfd, MD5 on md5.
func frrConf(nodes int, bfd, md5 map[int]bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "router bgp %d\n bgp router-id 198.18.100.1\n no bgp ebgp-requires-policy\n", routerASN)
	for i := 1; i <= nodes; i++ {
		for j, a := range []netip.Addr{subnetV4(i, 10), subnetV6(i, 0x10)} {
			// update-source: bgpd registers the BFD session with its
			// source from the start; left to learn it when the session
			// comes up, it replaces the BFD session then, which the
			// node sees as its BFD going down.
			src := []netip.Addr{subnetV4(i, 1), subnetV6(i, 1)}[j]
			fmt.Fprintf(&b, " neighbor %v remote-as %d\n neighbor %v update-source %v\n neighbor %v timers 10 30\n neighbor %v timers connect 1\n",
				a, nodeASN, a, src, a, a)
			if bfd[i] {
				fmt.Fprintf(&b, " neighbor %v bfd profile fast\n", a)
			}
			if md5[i] {
				fmt.Fprintf(&b, " neighbor %v password %s\n", a, md5Password)
			}
		}
	}
	b.WriteString(" address-family ipv4 unicast\n  maximum-paths 8\n")
	for i := 1; i <= nodes; i++ {
		fmt.Fprintf(&b, "  no neighbor %v activate\n", subnetV6(i, 0x10))
	}
	b.WriteString(" exit-address-family\n address-family ipv6 unicast\n  maximum-paths 8\n")
	for i := 1; i <= nodes; i++ {
		fmt.Fprintf(&b, "  neighbor %v activate\n", subnetV6(i, 0x10))
	}
	b.WriteString(" exit-address-family\n!\n")
	return b.String()
}

// TestFRR runs the suite against FRR 8.4 (bgpd, zebra, bfdd).
func TestFRR(t *testing.T) {
	requireFRR(t)
	l := newLab(t, 3)
	runSuite(t, l, l.startFRR(t, frrConf(3, labBFD, labMD5)))
}

func (f *frr) established(a netip.Addr) error {
	n, err := f.neighbor(a)
	if err != nil {
		return err
	}
	if n.State != "Established" {
		return fmt.Errorf("bgpd: neighbor %v is %s", a, n.State)
	}
	return nil
}

func (f *frr) attributes() error {
	out, err := f.vtysh("show bgp ipv4 unicast " + vip4.String() + "/32 json")
	if err != nil {
		return err
	}
	if !strings.Contains(out, `"string":"64512:100"`) || !strings.Contains(out, `"string":"64512:1:1"`) {
		return fmt.Errorf("bgpd's path to %v lacks community 64512:100 or large community 64512:1:1:\n%s", vip4, out)
	}
	return nil
}

func (f *frr) mark(a netip.Addr) (any, error) { return f.neighbor(a) }

// stopped: bgpd counts UPDATEs (a withdrawal is one) and NOTIFICATIONs
// received; both must have gone up.
func (f *frr) stopped(a netip.Addr, mark any) error {
	before := mark.(neighbor)
	after, err := f.neighbor(a)
	if err != nil {
		return err
	}
	if after.MessageStats.UpdatesRecv <= before.MessageStats.UpdatesRecv {
		return fmt.Errorf("bgpd received no UPDATE from %v during its stop (updates %d -> %d): no withdrawal before exit",
			a, before.MessageStats.UpdatesRecv, after.MessageStats.UpdatesRecv)
	}
	if after.MessageStats.NotificationsRecv <= before.MessageStats.NotificationsRecv {
		return fmt.Errorf("bgpd received no NOTIFICATION from %v during its stop (%d -> %d), want a Cease after the withdrawal",
			a, before.MessageStats.NotificationsRecv, after.MessageStats.NotificationsRecv)
	}
	return nil
}

func (f *frr) heldForRestart(netip.Addr) error {
	out, err := f.vtysh("show bgp ipv4 unicast " + vip4.String() + "/32")
	if err != nil {
		return err
	}
	if !strings.Contains(strings.ToLower(out), "stale") {
		return fmt.Errorf("bgpd does not hold the route as stale during the restart:\n%s", out)
	}
	return nil
}

func (f *frr) restarted(netip.Addr) error {
	out, err := f.vtysh("show bgp ipv4 unicast " + vip4.String() + "/32")
	if err != nil {
		return err
	}
	if strings.Contains(strings.ToLower(out), "stale") {
		return fmt.Errorf("route still stale:\n%s", out)
	}
	return nil
}

//go:build linux

package bgp

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/testutil"
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

// reset is `clear bgp A`: bgpd sends a Cease, administrative reset.
func (f *frr) reset(a netip.Addr) error {
	_, err := f.vtysh("clear bgp " + a.String())
	return err
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

// TestFRRAttributes: the rest of the per-peer settings against FRR. n1
// peers eBGP multihop with the router's loopback (with multihop BFD),
// carries IPv6 over that IPv4 session with its own IPv6 next hop, and
// announces with MED 50 and the AS path prepended twice; n2 peers iBGP
// with local preference 200. bgpd must show each attribute, prefer n2 (the
// higher local preference), and move to n1 when n2 withdraws.
func TestFRRAttributes(t *testing.T) {
	requireFRR(t)
	l := newLab(t, 2)
	rlo := netip.MustParseAddr("198.18.200.1")
	if err := ipIn(l.router, "addr", "add", rlo.String()+"/32", "dev", "lo"); err != nil {
		t.Fatal(err)
	}
	f := l.startFRR(t, fmt.Sprintf(`router bgp %d
 bgp router-id 198.18.100.1
 no bgp ebgp-requires-policy
 neighbor 198.18.1.10 remote-as %d
 neighbor 198.18.1.10 ebgp-multihop 2
 neighbor 198.18.1.10 update-source %v
 neighbor 198.18.1.10 timers connect 1
 neighbor 198.18.1.10 bfd profile fast
 neighbor 198.18.2.10 remote-as %d
 neighbor 198.18.2.10 update-source 198.18.2.1
 neighbor 198.18.2.10 timers connect 1
 address-family ipv6 unicast
  neighbor 198.18.1.10 activate
 exit-address-family
!
`, routerASN, nodeASN, rlo, routerASN))
	u32 := func(v uint32) *uint32 { return &v }
	n1 := Config{ASN: nodeASN, RouterID: subnetV4(1, 10), NextHopIPv6: subnetV6(1, 0x10),
		Peers: []Peer{{Address: rlo, ASN: routerASN, LocalAddress: subnetV4(1, 10), Multihop: 2, IPv4: true, IPv6: true,
			HoldTime: 30 * time.Second, BFD: &BFD{Interval: 100 * time.Millisecond, Multiplier: 3, Multihop: true}}},
		Routes: []Route{{VIP: vip4, Attributes: Attributes{MED: u32(50), Prepend: 2}}, {VIP: vip6}}}
	n2 := Config{ASN: routerASN, RouterID: subnetV4(2, 10),
		Peers:  []Peer{{Address: subnetV4(2, 1), ASN: routerASN, LocalAddress: subnetV4(2, 10)}},
		Routes: []Route{{VIP: vip4, Attributes: Attributes{LocalPref: u32(200)}}}}
	sp1 := l.startSpeaker(t, 1, n1)
	sp2 := l.startSpeaker(t, 2, n2)
	waitEstablished(t, f, subnetV4(1, 10), subnetV4(2, 10))

	type path struct {
		Aspath struct {
			String string `json:"string"`
		} `json:"aspath"`
		Med       *int `json:"metric"`
		LocalPref *int `json:"locPrf"`
		Peer      struct {
			PeerID string `json:"peerId"`
		} `json:"peer"`
		Bestpath *struct {
			Overall bool `json:"overall"`
		} `json:"bestpath"`
	}
	paths := func() (map[string]path, error) {
		out, err := f.vtysh("show bgp ipv4 unicast " + vip4.String() + "/32 json")
		if err != nil {
			return nil, err
		}
		var r struct {
			Paths []path `json:"paths"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			return nil, fmt.Errorf("%v: %s", err, out)
		}
		m := map[string]path{}
		for _, p := range r.Paths {
			m[p.Peer.PeerID] = p
		}
		if len(m) != 2 {
			return m, fmt.Errorf("bgpd has %d paths to %v, want 2: %s", len(m), vip4, out)
		}
		return m, nil
	}
	t.Run("attributes", func(t *testing.T) {
		var ps map[string]path
		testutil.Eventually(t, 20*time.Second, func() (err error) { ps, err = paths(); return err })
		p1, p2 := ps["198.18.1.10"], ps["198.18.2.10"]
		if p1.Aspath.String != "64512 64512 64512" || p1.Med == nil || *p1.Med != 50 {
			t.Errorf("n1's path: AS path %q MED %v, want 64512 64512 64512 and 50", p1.Aspath.String, p1.Med)
		}
		if p2.LocalPref == nil || *p2.LocalPref != 200 || p2.Aspath.String != "Local" {
			t.Errorf("n2's path: local preference %v AS path %q, want 200 and Local (iBGP, empty)", p2.LocalPref, p2.Aspath.String)
		}
		if p2.Bestpath == nil || !p2.Bestpath.Overall {
			t.Errorf("bgpd's best path is not n2's (local preference 200): %+v", ps)
		}
		l.wantNexthops(t, vip4, 10*time.Second, 2)
	})
	t.Run("ipv6-over-ipv4-session", func(t *testing.T) {
		l.wantNexthops(t, vip6, 20*time.Second, 1)
	})
	t.Run("multihop-bfd-up", func(t *testing.T) {
		testutil.Eventually(t, 20*time.Second, func() error {
			out, err := f.vtysh("show bfd peers json")
			if err != nil {
				return err
			}
			var peers []struct {
				Multihop bool   `json:"multihop"`
				Peer     string `json:"peer"`
				Status   string `json:"status"`
			}
			if err := json.Unmarshal([]byte(out), &peers); err != nil {
				return err
			}
			for _, p := range peers {
				if p.Peer == "198.18.1.10" && p.Multihop && p.Status == "up" {
					return nil
				}
			}
			return fmt.Errorf("bfdd has no multihop session up with n1: %s", out)
		})
	})
	t.Run("backup-takes-over", func(t *testing.T) {
		if _, err := sp2.send("ineligible"); err != nil {
			t.Fatal(err)
		}
		l.wantNexthops(t, vip4, 10*time.Second, 1)
		if got, err := l.reach(vip4, 3); err != nil || got["n1"] != 3 {
			t.Errorf("client: %v, %v; want 3 answers from n1", got, err)
		}
	})

	// The router's bfdd dies: n1's BFD detects it and takes n1's BGP
	// session down at once.
	t.Run("peer-bfd-lost-takes-bgp-down", func(t *testing.T) {
		testutil.Eventually(t, 10*time.Second, func() error {
			st, err := sp1.status()
			if err != nil {
				return err
			}
			if st.Peers[0].BFD != "up" {
				return fmt.Errorf("n1's BFD is %q, want up first", st.Peers[0].BFD)
			}
			return nil
		})
		if err := syscall.Kill(-f.procs["bfdd"].Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, func() error {
			st, err := sp1.status()
			if err != nil {
				return err
			}
			p := st.Peers[0]
			if p.BFD != "down" || !strings.Contains(p.HeldDown, "Control Detection Time Expired") || p.Session == "established" {
				return fmt.Errorf("n1's peer %+v, want BFD down, the session held down for detection time expired", p)
			}
			return nil
		})
		if !strings.Contains(sp1.log.String(), "taking session down") {
			t.Errorf("n1's log does not say it took the session down:\n%s", sp1.log.String())
		}
	})
}

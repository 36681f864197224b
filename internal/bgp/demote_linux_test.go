//go:build linux

package bgp

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/testutil"
)

// runDemotion runs three speakers against the router r: n1 and n2 demote
// as d says, n3 has demotion off (Config.Demote nil: a failing check
// withdraws). A demoted node is routed only while no node whose checks
// pass announces the VIP; with demotion off the route goes. asn is the
// nodes' AS (the router's for iBGP).
func runDemotion(t *testing.T, l *lab, r labRouter, asn uint32, d Demotion) {
	sp := map[int]*speakerProc{}
	var all []netip.Addr
	for i := 1; i <= 3; i++ {
		cfg := nodeConfig(i, false, false, 0)
		cfg.ASN = asn
		if i != 3 {
			cfg.Demote = &d
		}
		sp[i] = l.startSpeaker(t, i, cfg)
		all = append(all, subnetV4(i, 10), subnetV6(i, 0x10))
	}
	send := func(i int, cmd string) {
		t.Helper()
		if _, err := sp[i].send(cmd); err != nil {
			t.Fatalf("n%d %s: %v", i, cmd, err)
		}
	}
	want := func(nodes ...int) {
		t.Helper()
		for _, v := range []netip.Addr{vip4, vip6} {
			l.wantNexthops(t, v, 20*time.Second, nodes...)
		}
	}
	waitEstablished(t, r, all...)
	want(1, 2, 3)

	// n1 and n3 fail a weighted check: n1 stays announced with the
	// worse path, which the router does not use while n2's is better;
	// n3 withdraws.
	send(1, "demoted")
	send(3, "demoted")
	want(2)
	testStatusDemoted(t, sp[1], true)

	// n2 withdraws: the demoted n1 is the last node announcing, and the
	// router sends the VIPs to it; n3 (demotion off) stays withdrawn.
	send(2, "ineligible")
	want(1)
	if got, err := l.reach(vip4, 3); err != nil || got["n1"] != 3 {
		t.Errorf("client to %v with n1 the last, demoted: %v, %v; want 3 answers from n1", vip4, got, err)
	}

	// n1, the last node, passes its check again: its path is replaced
	// by one with its own attributes, and the router's route never goes
	// meanwhile (sampled until 1 s after n1 reports the change).
	stop := watchRoute(l, vip4)
	send(1, "eligible")
	testStatusDemoted(t, sp[1], false)
	time.Sleep(time.Second)
	if n, empty := stop(); empty > 0 || n == 0 {
		t.Errorf("the router had no route to %v in %d of %d samples while n1, the last node, left demotion", vip4, empty, n)
	}
	// n2 coming back shares the VIPs with it.
	send(2, "eligible")
	want(1, 2)

	// With demotion off a failing check takes the route away even from
	// the last node: n1 and n2 withdraw, n3 is demoted, nothing is routed.
	send(3, "eligible")
	want(1, 2, 3)
	send(3, "demoted")
	want(1, 2)
	send(1, "ineligible")
	send(2, "ineligible")
	want()
}

// watchRoute samples the router's kernel route to v until the returned
// func is called, which says how many samples it took and how many found
// no route.
func watchRoute(l *lab, v netip.Addr) func() (n, empty int) {
	done := make(chan struct{})
	res := make(chan [2]int, 1)
	go func() {
		var n, empty int
		for {
			select {
			case <-done:
				res <- [2]int{n, empty}
				return
			default:
			}
			if hops, err := l.nexthops(v); err == nil {
				n++
				if len(hops) == 0 {
					empty++
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return func() (int, int) {
		close(done)
		r := <-res
		return r[0], r[1]
	}
}

// testStatusDemoted waits until every route of p's status is announced
// and demoted as asked.
func testStatusDemoted(t *testing.T, p *speakerProc, demoted bool) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() error {
		st, err := p.status()
		if err != nil {
			return err
		}
		ok := len(st.Routes) == 2
		for _, r := range st.Routes {
			ok = ok && r.Announced && r.Demoted == demoted
		}
		if !ok {
			return fmt.Errorf("status %+v: want both routes announced, demoted %v", st, demoted)
		}
		return nil
	})
}

// TestFRRDemotion runs runDemotion against FRR 8.4 over eBGP, the
// demoted path 3 ASNs longer.
func TestFRRDemotion(t *testing.T) {
	requireFRR(t)
	l := newLabPrefixed(t, "vbdf", 3)
	runDemotion(t, l, l.startFRR(t, frrConf(3, nil, nil)), nodeASN, Demotion{Prepend: 3})
}

// TestFRRDemotionIBGP runs runDemotion against FRR 8.4 over iBGP, the
// demoted path with LOCAL_PREF 50 and MED 100 (the cluster file's
// default with an iBGP peer).
func TestFRRDemotionIBGP(t *testing.T) {
	requireFRR(t)
	l := newLabPrefixed(t, "vbdi", 3)
	conf := strings.NewReplacer(fmt.Sprintf("remote-as %d", nodeASN), fmt.Sprintf("remote-as %d", routerASN),
		"maximum-paths 8", "maximum-paths ibgp 8").Replace(frrConf(3, nil, nil))
	lp, med := uint32(50), uint32(100)
	runDemotion(t, l, l.startFRR(t, conf), routerASN, Demotion{LocalPref: &lp, MED: &med})
}

// TestBIRDDemotion runs runDemotion against BIRD 2 over eBGP.
func TestBIRDDemotion(t *testing.T) {
	requireBIRD(t)
	l := newLabPrefixed(t, "vbdb", 3)
	runDemotion(t, l, l.startBIRD(t, birdConf(3, nil, nil)), nodeASN, Demotion{Prepend: 3})
}

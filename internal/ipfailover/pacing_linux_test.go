package ipfailover_test

import (
	"bufio"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/testnet"
)

// TestAnnouncePacingOnTheWire: a node taking 300 VIPs with
// --announce-rate 200, seen from another host with tcpdump: the first
// gratuitous ARP of every VIP leaves before the second of any, and the
// repeats are paced: the first copies count against the rate, and with the
// pacer's burst of 64 (engine announceFirstMax), announcement k >= 300
// never precedes (k-63)/200 s after the first, less 5 ms for the capture's
// timestamps. How soon they leave is bench/ipfailover's to measure, not
// this test's.
func TestAnnouncePacingOnTheWire(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vdn"})
	node, observer := topo.Hosts[0], topo.Hosts[1]
	const (
		vipList = "198.18.16.1-198.18.17.44"
		rate    = 200
		burst   = 64
		copies  = 2 // captured per VIP: the first two of garp_master_repeat's 5
	)
	vips := mustExpand(t, vipList)
	isVIP := map[netip.Addr]bool{}
	for _, v := range vips {
		isVIP[v] = true
	}
	if _, err := node.Run("ip", "route", "add", "198.18.16.0/20", "dev", "eth0"); err != nil {
		t.Fatal(err)
	}
	listen(t, node, monitorPort)

	dump := observer.Command("tcpdump", "-i", observer.Link, "-n", "-l", "-tt", "-c", strconv.Itoa(len(vips)*copies+50), "arp")
	out, err := dump.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errOut, err := dump.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := observer.StartFor(t, dump); err != nil {
		t.Fatalf("tcpdump: %v", err)
	}
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(errOut)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening on") {
				close(listening)
				break
			}
		}
		for sc.Scan() {
		}
	}()
	select {
	case <-listening:
	case <-time.After(20 * time.Second):
		t.Fatal("tcpdump did not start listening within 20s")
	}

	type garp struct {
		at   float64 // seconds, tcpdump's -tt
		addr netip.Addr
	}
	garps := make(chan garp, len(vips)*copies)
	go func() {
		defer close(garps)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			// 1764374400.123456 ARP, Request who-has A (ff:ff:ff:ff:ff:ff) tell A, length 28
			f := strings.Fields(sc.Text())
			if len(f) < 9 || f[3] != "who-has" || f[6] != "tell" {
				continue
			}
			a, err := netip.ParseAddr(f[4])
			if err != nil || !isVIP[a] || strings.TrimSuffix(f[7], ",") != f[4] {
				continue
			}
			at, err := strconv.ParseFloat(f[0], 64)
			if err != nil {
				continue
			}
			garps <- garp{at, a}
		}
	}()

	startNode(t, node, []string{
		"OPENSHIFT_HA_CONFIG_NAME=vdnpace",
		"OPENSHIFT_HA_VIRTUAL_IPS=" + vipList,
		"OPENSHIFT_HA_REPLICA_COUNT=1",
		"OPENSHIFT_HA_VIP_GROUPS=1",
		fmt.Sprintf("OPENSHIFT_HA_MONITOR_PORT=%d", monitorPort),
		"OPENSHIFT_HA_CHECK_INTERVAL=0.2",
	}, append([]string{"--announce-rate", strconv.Itoa(rate)}, fastFlags...)...)

	var got []garp
	timeout := time.After(60 * time.Second)
collect:
	for len(got) < len(vips)*copies {
		select {
		case g, ok := <-garps:
			if !ok {
				break collect
			}
			got = append(got, g)
		case <-timeout:
			break collect
		}
	}
	if len(got) < len(vips)*copies {
		t.Fatalf("captured %d gratuitous ARPs for the VIPs within 60s, want %d", len(got), len(vips)*copies)
	}
	seen := map[netip.Addr]int{}
	for i, g := range got[:len(vips)] {
		if seen[g.addr]++; seen[g.addr] > 1 {
			t.Fatalf("gratuitous ARP %d is the second for %s before every VIP had its first", i, g.addr)
		}
	}
	if len(seen) != len(vips) {
		t.Errorf("the first %d gratuitous ARPs name %d VIPs, want %d", len(vips), len(seen), len(vips))
	}
	const slack = 0.005
	for k, g := range got {
		if k < len(vips) {
			continue // first copies: at once
		}
		if earliest := float64(k-burst+1)/rate - slack; g.at-got[0].at < earliest {
			t.Fatalf("gratuitous ARP %d left %.4f s after the first, before the %.4f s that rate %d and burst %d allow",
				k, g.at-got[0].at, earliest, rate, burst)
		}
	}
	t.Logf("%d gratuitous ARPs over %.3f s", len(got), got[len(got)-1].at-got[0].at)
}

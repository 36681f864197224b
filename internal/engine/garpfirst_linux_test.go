package engine_test

import (
	"bufio"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestAnnouncesBeforeAdvertising: a node that preempts a lower master
// sends its first gratuitous ARP for the VIP before its first
// advertisement, which is what makes the old master let the VIP go; hosts
// then never send to a node that has let go before they learn the new one.
// Seen from the old master's host with tcpdump, the new master's frames
// only. (From the announcer's timer the first gratuitous ARP left after the
// advertisement, by 131 ms on a busy machine.) A master that takes over
// from one that fell silent advertises first (fsm.Action.MasterGone): no
// one lets go then, and the advertisement stops the other backups.
func TestAnnouncesBeforeAdvertising(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vsT"})
	node, other := topo.Hosts[0], topo.Hosts[1]
	vip := netip.MustParseAddr("198.18.0.100")

	conf := peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 56, VIP: netip.PrefixFrom(vip, 32)}
	low := conf
	low.Priority = 50
	startVipstack(t, bin, other, low)
	for deadline := time.Now().Add(20 * time.Second); ; {
		if out, _ := other.Run("ip", "-o", "addr", "show", "dev", other.Link); strings.Contains(out, " "+vip.String()+"/") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lower node did not take %s", vip)
		}
		time.Sleep(50 * time.Millisecond) // polling the lower node's addresses
	}
	// tcpdump says "listening on" once its socket is open.
	out := startTcpdump(t, other, "tcpdump", "-i", other.Link, "-n", "-l", "-c", "20", "ether src "+node.MAC+" and (arp or ip proto 112)")
	conf.Priority = 100
	startVipstack(t, bin, node, conf)

	lines := make(chan string, 20)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// Read up to the first advertisement.
	var got []string
	for len(got) == 0 || !strings.Contains(got[len(got)-1], "VRRP") {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("tcpdump ended before an advertisement:\n%s", strings.Join(got, "\n"))
			}
			got = append(got, l)
		case <-time.After(20 * time.Second):
			t.Fatalf("no advertisement captured:\n%s", strings.Join(got, "\n"))
		}
	}
	garp := "who-has " + vip.String() + " (ff:ff:ff:ff:ff:ff) tell " + vip.String()
	if !strings.Contains(got[0], garp) {
		t.Fatalf("the new master advertised before its first gratuitous ARP for %s:\n%s", vip, strings.Join(got, "\n"))
	}
}

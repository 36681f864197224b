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

// TestAnnouncesBeforeAdvertising: a node that becomes master sends its
// first gratuitous ARP for the VIP before its first advertisement, which is
// what makes an old master let the VIP go; hosts then never send to a node
// that has let go before they learn the new one. Seen from another host
// with tcpdump. (From the announcer's timer the first gratuitous ARP left
// after the advertisement, by 131 ms on a busy machine.)
func TestAnnouncesBeforeAdvertising(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vsT"})
	node, other := topo.Hosts[0], topo.Hosts[1]
	vip := netip.MustParseAddr("198.18.0.100")

	// tcpdump says "listening on" once its socket is open.
	out := startTcpdump(t, other, "tcpdump", "-i", other.Link, "-n", "-l", "-c", "20", "arp or ip proto 112")
	startVipstack(t, bin, node, peers.Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 56, Priority: 100,
		VIP: netip.PrefixFrom(vip, 32)})

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

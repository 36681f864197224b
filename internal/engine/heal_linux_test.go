package engine_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestHealAnnouncesUnicastSource: when a unicast node's link comes back
// after a cut, it sends a gratuitous ARP for its own source address, so
// the peers that kept sending to it while it was away (their neighbour
// entry for it INCOMPLETE or FAILED) reach it at once instead of after
// the kernel's 1 s retransmit timer (bench/chaos finding 3). The peer
// captures ARP packets whose sender and target are both the healed node's
// address; the node's VIP announcements (sender = the VIP) do not match.
func TestHealAnnouncesUnicastSource(t *testing.T) {
	testnet.RequireRoot(t)
	vipstackBin(t)
	c := newCluster(t, mode{version: 3, family: 4, unicast: true}, []peers.Impl{peers.Vipstack, peers.Vipstack}, []int{150, 100})
	c.startAll()
	c.waitMaster(0, "start")
	healed := c.topo.Hosts[1]
	if err := healed.Cut(true); err != nil {
		t.Fatal(err)
	}
	// The healed node sees its link go down (carrier lost) before it comes
	// back: wait for the engine to log it.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(c.nodes[1].Log(), `"up":false`) && !strings.Contains(c.nodes[1].Log(), "up=false") {
		if time.Now().After(deadline) {
			t.Fatalf("node2 never noticed its link going down\n%s", tail(c.nodes[1].Log(), 20))
		}
		time.Sleep(20 * time.Millisecond) // polling the log
	}
	a := healed.IPv4.Addr().As4()
	ip := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	filter := fmt.Sprintf("arp and arp[14:4] = 0x%08x and arp[24:4] = 0x%08x", ip, ip)
	capture := c.topo.Hosts[0].Command("timeout", "10", "tcpdump", "-c", "1", "-n", "-l", "-i", c.topo.Hosts[0].Link, filter)
	var out, errb bytes.Buffer
	capture.Stdout, capture.Stderr = &out, &errb
	if err := c.topo.Hosts[0].Start(capture); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(errb.String(), "listening on") {
		if time.Now().After(deadline.Add(5 * time.Second)) {
			t.Fatalf("tcpdump did not start: %s", errb.String())
		}
		time.Sleep(10 * time.Millisecond) // polling tcpdump's banner
	}
	if err := healed.Cut(false); err != nil {
		t.Fatal(err)
	}
	err := capture.Wait()
	if err != nil || !strings.Contains(out.String(), "ARP") {
		t.Fatalf("no gratuitous ARP for %s after its link came back (tcpdump: %v)\n%s%s\n---- node2 log:\n%s",
			healed.IPv4.Addr(), err, out.String(), errb.String(), tail(c.nodes[1].Log(), 20))
	}
	c.waitMaster(0, "healed: node1 is the one master again")
}

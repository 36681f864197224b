package engine_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/announce"
	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/vrrp"
)

// TestLowerMasterAnnouncesLast: a vipstack master hears a router of lower
// priority advertise as master, and that router's gratuitous ARP for the
// VIP reaches a client after vipstack's immediate answer (the race when
// several backups take over at once: in the demo, three masters claimed
// the DNS VIP and the client sent its queries to one that had stepped
// down). vipstack announces the VIP again after the other router stepped
// down, so the client's ARP entry points back at the master. The second
// burst after becoming master (garp_master_delay) is off, and the client
// sends nothing meanwhile, so nothing else could correct the entry.
func TestLowerMasterAnnouncesLast(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Client: true, Prefix: "vsQ"})
	node, other, client := topo.Hosts[0], topo.Hosts[1], topo.Client
	vip := netip.MustParseAddr("198.18.0.100")
	const statusAddr = "127.0.0.1:9651"
	n := startVipstack(t, bin, node, peers.Conf{Version: 3, Interval: time.Second, VRID: 52, Priority: 100,
		VIP: netip.PrefixFrom(vip, 32), NoSecondGARP: true}, "--status-addr", statusAddr)
	if _, err := peers.WaitSoleHolder(topo.Hosts, vip, node, 2*time.Second, 20*time.Second); err != nil {
		t.Fatalf("vipstack alone did not become master: %v", err)
	}

	// The client learns the VIP's address by talking to it.
	if out, err := client.Run("ping", "-c1", "-W2", vip.String()); err != nil {
		t.Fatalf("client cannot reach the VIP: %v\n%s", err, out)
	}
	if mac := neighMAC(t, client, vip); mac != node.MAC {
		t.Fatalf("client's ARP entry for %s is %q, want the master's %s", vip, mac, node.MAC)
	}

	// The other router: a valid advert below the master's priority, then
	// its own gratuitous ARP for the VIP, as a backup that had just taken
	// it over sends them.
	lower := vrrp.Advertisement{Version: 3, VRID: 52, Priority: 50, Interval: time.Second,
		Addresses: []netip.Addr{vip}}
	adv, err := lower.Marshal(other.IPv4.Addr(), vrrp.MulticastIPv4)
	if err != nil {
		t.Fatal(err)
	}
	var ann *announce.Announcer
	if err := other.Do(func() error {
		ifi, err := net.InterfaceByName(other.Link)
		if err != nil {
			return err
		}
		ann, err = announce.New(ifi)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ann.Close()
	s := newRawSender(t, other)
	if err := s.send(adv, 255); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the other router's announcement leaves after the master's answer
	if err := other.Do(func() error { return ann.Announce(vip) }); err != nil {
		t.Fatal(err)
	}

	// The client's entry moved to the other router, and must come back.
	var last string
	poll(t, 10*time.Second, "the client's ARP entry for the VIP points at the master again", func() (bool, error) {
		last = neighMAC(t, client, vip)
		return last == node.MAC, fmt.Errorf("entry is %q (the other router is %s)", last, other.MAC)
	})
	if !strings.Contains(n.Log(), "after the last advertisement of the lower router as master") {
		t.Errorf("the master's log does not say why it announced again:\n%s", tail(n.Log(), 20))
	}
	if out, err := client.Run("ping", "-c1", "-W2", vip.String()); err != nil {
		t.Fatalf("client cannot reach the VIP afterwards: %v\n%s", err, out)
	}
	if c := dualMaster(t, node, statusAddr); c != nil {
		t.Fatalf("one advertisement as master was reported as a second master: %+v", *c)
	}

	// A router that keeps advertising as master (it does not hear the
	// master) is a second master: the status names it. Its advertisements
	// span more than two of its 1 s intervals.
	for range 4 {
		if err := s.send(adv, 255); err != nil {
			t.Fatal(err)
		}
		time.Sleep(700 * time.Millisecond) // the other router's advertisements, 0.7 s apart
	}
	c := dualMaster(t, node, statusAddr)
	if c == nil {
		t.Fatalf("three advertisements as master in a row were not reported as a second master")
	}
	if c.Peer != other.IPv4.Addr().String() || !strings.Contains(c.Detail, "advertises as master too (priority 50, ours 100)") {
		t.Errorf("second master reported as %+v, want peer %s and its priority", *c, other.IPv4.Addr())
	}
	if !strings.Contains(n.Log(), "two masters: another router keeps advertising as master") {
		t.Errorf("the log does not report the second master:\n%s", tail(n.Log(), 20))
	}
}

// dualMaster returns the dual_master conflict in the node's /status, or nil.
func dualMaster(t *testing.T, h *testnet.Host, statusAddr string) *engine.Conflict {
	t.Helper()
	body, err := httpGet(h, statusAddr, "/status")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Instances []engine.InstanceStatus `json:"instances"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("status: %v\n%s", err, body)
	}
	for _, in := range st.Instances {
		for _, c := range in.Conflicts {
			if c.Kind == "dual_master" {
				return &c
			}
		}
	}
	return nil
}

// neighMAC returns the link-layer address of h's neighbour entry for addr,
// or "" when it has none.
func neighMAC(t *testing.T, h *testnet.Host, addr netip.Addr) string {
	t.Helper()
	out, err := h.Run("ip", "neigh", "show", addr.String(), "dev", h.Link)
	if err != nil {
		t.Fatalf("ip neigh in %s: %v\n%s", h.Name, err, out)
	}
	f := strings.Fields(out)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "lladdr" {
			return f[i+1]
		}
	}
	return ""
}

// TestHealedPartitionMovesClients: h1 (priority 100) and h2 (90) cannot hear
// each other, so both hold the VIP, and the client's ARP entry points at h2,
// the last to announce it. The partition heals, and h1's advertisement
// reaches h2 before h2's next one reaches h1 (h2 advertises every 5 s, h1
// every 100 ms): h2 steps down. h1 never heard h2 as master, so only h2 can
// tell it that hosts may still point at h2: h2 advertises once as it steps
// down, h1 announces the VIP again, and the client's entry moves to h1.
// Without that advertisement the client kept sending to h2 until its entry
// failed (4.8 s; 46 s when the entry had gone REACHABLE), as with keepalived.
func TestHealedPartitionMovesClients(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Client: true, Prefix: "vsQ"})
	h1, h2, client := topo.Hosts[0], topo.Hosts[1], topo.Client
	vip := netip.MustParseAddr("198.18.0.100")
	// Each drops the other's VRRP packets: a partition between the two.
	partition := func(h, other *testnet.Host) {
		t.Helper()
		if out, err := h.Run("nft", "add table inet vsq_partition { chain in { type filter hook input priority 0; ip saddr "+
			other.IPv4.Addr().String()+" ip protocol vrrp drop; }; }"); err != nil {
			t.Fatalf("nft in %s: %v\n%s", h.Name, err, out)
		}
	}
	partition(h1, h2)
	partition(h2, h1)
	conf := peers.Conf{Version: 3, VRID: 54, VIP: netip.PrefixFrom(vip, 32), NoSecondGARP: true}
	c1 := conf
	c1.Priority, c1.Interval = 100, 100*time.Millisecond
	n1 := startVipstack(t, bin, h1, c1)
	poll(t, 20*time.Second, "h1 holds the VIP", func() (bool, error) { return h1.HasAddr(vip) })
	if out, err := client.Run("ping", "-c1", "-W2", vip.String()); err != nil {
		t.Fatalf("client cannot reach the VIP: %v\n%s", err, out)
	}
	c2 := conf
	c2.Priority, c2.Interval, c2.StartMaster = 90, 5*time.Second, true
	startVipstack(t, bin, h2, c2)
	// h2 hears no master: it takes over after its Master_Down_Interval
	// (3 x 5 s + skew, about 18 s; state MASTER does not shorten it).
	poll(t, 40*time.Second, "the client follows h2's announcement", func() (bool, error) {
		mac := neighMAC(t, client, vip)
		return mac == h2.MAC, fmt.Errorf("entry is %q", mac)
	})

	for _, h := range []*testnet.Host{h1, h2} {
		if out, err := h.Run("nft", "delete table inet vsq_partition"); err != nil {
			t.Fatalf("nft in %s: %v\n%s", h.Name, err, out)
		}
	}
	poll(t, 10*time.Second, "h2 steps down", func() (bool, error) {
		held, err := h2.HasAddr(vip)
		return err == nil && !held, err
	})
	var last string
	poll(t, 10*time.Second, "the client's ARP entry points at h1 again", func() (bool, error) {
		last = neighMAC(t, client, vip)
		return last == h1.MAC, fmt.Errorf("entry is %q (h1 %s, h2 %s)", last, h1.MAC, h2.MAC)
	})
	if !strings.Contains(n1.Log(), "another router advertised as master") {
		t.Errorf("h1's log does not say why it announced again:\n%s", tail(n1.Log(), 20))
	}
}

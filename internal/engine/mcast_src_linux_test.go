package engine_test

import (
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestMcastSrcIPLikeKeepalived: with mcast_src_ip set to a second address
// of the interface, keepalived 2.2.7 and vipstack both send their multicast
// adverts from that address (to 224.0.0.18), not from the interface's
// primary address. A listener in another namespace reads the source of the
// adverts each sends.
func TestMcastSrcIPLikeKeepalived(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vska"})
	h, listener := topo.Hosts[0], topo.Hosts[1]
	const src = "198.18.0.50"
	if out, err := h.Run("ip", "addr", "add", src+"/24", "dev", "eth0"); err != nil {
		t.Fatalf("add %s: %v: %s", src, err, out)
	}
	var pc *ipv4.PacketConn
	if err := listener.Do(func() error {
		c, err := net.ListenPacket("ip4:112", "0.0.0.0")
		if err != nil {
			return err
		}
		pc = ipv4.NewPacketConn(c)
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		return pc.JoinGroup(ifi, &net.IPAddr{IP: net.IPv4(224, 0, 0, 18)})
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })

	const conf = `vrrp_instance VI_1 {
    state BACKUP
    interface eth0
    virtual_router_id %d
    priority 100
    advert_int 1
    mcast_src_ip %s
    virtual_ipaddress {
        198.18.0.100/32
    }
}
`
	for i, impl := range []peers.Impl{peers.Keepalived, peers.Vipstack} {
		vrid := 91 + i
		n, err := peers.Start(h, impl, fmt.Sprintf(conf, vrid, src), filepath.Join(t.TempDir(), string(impl)), bin)
		if err != nil {
			t.Fatal(err)
		}
		logOnFailure(t, n)
		// The first advert comes when the node becomes master (about 3 s
		// at advert_int 1); the deadline only ends a test that would hang.
		buf := make([]byte, 1500)
		var got netip.Addr
		deadline := time.Now().Add(15 * time.Second)
		for !got.IsValid() {
			pc.SetReadDeadline(deadline)
			nr, cm, _, err := readFrom(pc, buf)
			if err != nil {
				t.Fatalf("%s: no advert for VRID %d: %v", impl, vrid, err)
			}
			if nr >= 2 && int(buf[1]) == vrid && cm.IsValid() {
				got = cm
			}
		}
		if got != netip.MustParseAddr(src) {
			t.Errorf("%s sends its adverts from %s, want mcast_src_ip %s", impl, got, src)
		}
		if err := n.Term(); err != nil {
			t.Fatal(err)
		}
	}
}

// readFrom reads one packet's payload and its IP source.
func readFrom(pc *ipv4.PacketConn, buf []byte) (int, netip.Addr, net.Addr, error) {
	n, _, from, err := pc.ReadFrom(buf)
	if err != nil {
		return 0, netip.Addr{}, nil, err
	}
	a, _ := netip.AddrFromSlice(from.(*net.IPAddr).IP.To4())
	return n, a, from, nil
}

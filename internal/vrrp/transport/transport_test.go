package transport

import (
	"bytes"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/testnet"
)

// TestMulticastAndUnicastAcrossHosts sends between two namespaces and checks
// what the receiver learns about each packet.
func TestMulticastAndUnicastAcrossHosts(t *testing.T) {
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vstr"})
	h1, h2 := topo.Hosts[0], topo.Hosts[1]
	for _, fam := range []int{4, 6} {
		var rx, tx Conn
		var rxIf, txIf int
		open := func(h *testnet.Host, c *Conn, ifx *int) {
			t.Helper()
			if err := h.Do(func() error {
				var err error
				if *c, err = Listen(fam); err != nil {
					return err
				}
				ifi, err := net.InterfaceByName(h.Link)
				if err != nil {
					return err
				}
				*ifx = ifi.Index
				group := netip.MustParseAddr("224.0.0.18")
				if fam == 6 {
					group = netip.MustParseAddr("ff02::12")
				}
				return (*c).JoinGroup(ifi.Index, group)
			}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { (*c).Close() })
		}
		open(h1, &tx, &txIf)
		open(h2, &rx, &rxIf)

		src, dstM, dstU := h1.IPv4.Addr(), netip.MustParseAddr("224.0.0.18"), h2.IPv4.Addr()
		if fam == 6 {
			src, dstM, dstU = h1.LinkLocal, netip.MustParseAddr("ff02::12"), h2.IPv6.Addr()
		}
		got := make(chan Packet, 4)
		go func() {
			for {
				p, err := rx.ReadPacket()
				if err != nil {
					return
				}
				got <- p
			}
		}()
		small := []byte{0x31, 1, 100, 1, 0, 100, 0, 0, byte(fam), 2, 3, 4}
		// The largest VRRPv3 IPv6 advert (255 addresses, 4,088 bytes) must
		// arrive whole, not cut to a small read buffer.
		big := append([]byte{0x31, 1, 100, 255, 0, 100, 0, 0}, bytes.Repeat([]byte{0xfd, 0, 0xab}, 255*16/3+1)[:255*16]...)
		sends := []struct {
			dst     netip.Addr
			payload []byte
		}{{dstM, small}, {dstU, small}}
		if fam == 6 {
			sends = append(sends, struct {
				dst     netip.Addr
				payload []byte
			}{dstU, big})
		}
		for _, snd := range sends {
			dst, payload := snd.dst, snd.payload
			if err := tx.WritePacket(payload, src, dst, txIf); err != nil {
				t.Fatalf("IPv%d write to %v: %v", fam, dst, err)
			}
			select {
			case p := <-got:
				if !bytes.Equal(p.Payload, payload) || p.Src != src || p.Dst != dst || p.TTL != 255 || p.IfIndex != rxIf {
					t.Fatalf("IPv%d to %v: got %d bytes from %v to %v ttl %d ifindex %d, want %d bytes (%x...) src %v dst %v ttl 255 ifindex %d",
						fam, dst, len(p.Payload), p.Src, p.Dst, p.TTL, p.IfIndex, len(payload), payload[:min(len(payload), 12)], src, dst, rxIf)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("IPv%d: nothing received for a packet to %v", fam, dst)
			}
		}
	}
}

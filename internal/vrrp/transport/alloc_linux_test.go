package transport

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	"github.com/vipstack/vipstack/internal/testnet"
)

// TestPacketIOAllocs: WritePacket to the VRRP multicast group and to a
// unicast peer allocates nothing, and so does ReadPacketInto on the other
// host (a master sends one per instance per
// interval: with 1,000 masters the allocations of x/net's write path kept
// the collector running, docs/design/memory.md), and what arrives, read
// with x/net on the other host, is what keepalived sends: TOS / traffic
// class 0xc0, TTL / hop limit 255, protocol 112, the payload whole.
func TestPacketIOAllocs(t *testing.T) {
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "valw"})
	h1, h2 := topo.Hosts[0], topo.Hosts[1]
	payload := []byte{0x31, 51, 100, 1, 0, 100, 0, 0, 198, 18, 0, 100}
	for _, fam := range []int{4, 6} {
		var tx, rx Conn
		var txIf, rxIf int
		var rx4 *ipv4.RawConn
		var rx6 *ipv6.PacketConn
		group := netip.MustParseAddr("224.0.0.18")
		src, peer := h1.IPv4.Addr(), h2.IPv4.Addr()
		if fam == 6 {
			group, src, peer = netip.MustParseAddr("ff02::12"), h1.LinkLocal, h2.IPv6.Addr()
		}
		if err := h1.Do(func() error {
			var err error
			if tx, err = Listen(fam); err != nil {
				return err
			}
			ifi, err := net.InterfaceByName(h1.Link)
			txIf = ifi.Index
			return err
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tx.Close() })
		if err := h2.Do(func() error {
			ifi, err := net.InterfaceByName(h2.Link)
			if err != nil {
				return err
			}
			rxIf = ifi.Index
			if rx, err = Listen(fam); err != nil {
				return err
			}
			t.Cleanup(func() { rx.Close() })
			if err := rx.JoinGroup(ifi.Index, group); err != nil {
				return err
			}
			if fam == 4 {
				pc, err := net.ListenPacket("ip4:112", "0.0.0.0")
				if err != nil {
					return err
				}
				t.Cleanup(func() { pc.Close() })
				if rx4, err = ipv4.NewRawConn(pc); err != nil {
					return err
				}
				return rx4.JoinGroup(ifi, &net.IPAddr{IP: group.AsSlice()})
			}
			pc, err := net.ListenPacket("ip6:112", "::")
			if err != nil {
				return err
			}
			t.Cleanup(func() { pc.Close() })
			rx6 = ipv6.NewPacketConn(pc)
			if err := rx6.SetControlMessage(ipv6.FlagTrafficClass|ipv6.FlagHopLimit|ipv6.FlagDst|ipv6.FlagInterface, true); err != nil {
				return err
			}
			return rx6.JoinGroup(ifi, &net.IPAddr{IP: group.AsSlice()})
		}); err != nil {
			t.Fatal(err)
		}

		// A link that is gone fails the write, saying which step failed.
		err := tx.WritePacket(payload, src, group, 1<<20)
		wantOp := map[int]string{4: "set multicast interface", 6: "write to " + group.String()}[fam]
		var errno syscall.Errno
		if oe, ok := err.(*OpError); !ok || oe.Op != wantOp || !errors.As(err, &errno) {
			t.Errorf("IPv%d write out of a missing interface: %v, want an *OpError %q with the kernel's errno", fam, err, wantOp)
		}
		t.Logf("IPv%d write out of a missing interface: %v", fam, err)

		const runs = 50
		for _, dst := range []netip.Addr{group, peer} {
			var werr error
			allocs := testing.AllocsPerRun(runs, func() {
				if err := tx.WritePacket(payload, src, dst, txIf); err != nil && werr == nil {
					werr = err
				}
			})
			if werr != nil {
				t.Fatalf("IPv%d write to %v: %v", fam, dst, werr)
			}
			if allocs != 0 {
				t.Errorf("IPv%d to %v: %v allocations per WritePacket, want 0", fam, dst, allocs)
			}
			// AllocsPerRun ran it runs+1 times: each must arrive as sent,
			// read by this package without allocating, and by x/net.
			buf := make([]byte, bufSize)
			var rerr error
			i := 0
			allocs = testing.AllocsPerRun(runs, func() {
				p, err := rx.(interface {
					ReadPacketInto([]byte) (Packet, error)
				}).ReadPacketInto(buf)
				i++
				if err == nil && (!bytes.Equal(p.Payload, payload) || p.Src != src || p.Dst != dst || p.TTL != 255 || p.IfIndex != rxIf) {
					err = fmt.Errorf("packet %d: % x from %v to %v ttl %d ifindex %d, want % x from %v to %v ttl 255 ifindex %d",
						i, p.Payload, p.Src, p.Dst, p.TTL, p.IfIndex, payload, src, dst, rxIf)
				}
				if err != nil && rerr == nil {
					rerr = err
				}
			})
			if rerr != nil {
				t.Fatalf("IPv%d ReadPacketInto: %v", fam, rerr)
			}
			if allocs != 0 {
				t.Errorf("IPv%d to %v: %v allocations per ReadPacketInto, want 0", fam, dst, allocs)
			}
			for i := range runs + 1 {
				buf := make([]byte, 1500)
				var got []byte
				var tos, ttl int
				var from netip.Addr
				if fam == 4 {
					rx4.SetReadDeadline(time.Now().Add(5 * time.Second))
					h, p, _, err := rx4.ReadFrom(buf)
					if err != nil {
						t.Fatalf("IPv4 packet %d of %d to %v: %v", i+1, runs+1, dst, err)
					}
					got, tos, ttl = p, h.TOS, h.TTL
					from, _ = netip.AddrFromSlice(h.Src.To4())
					if h.Protocol != 112 || !h.Dst.Equal(dst.AsSlice()) {
						t.Fatalf("IPv4 packet %d: protocol %d to %v, want 112 to %v", i+1, h.Protocol, h.Dst, dst)
					}
				} else {
					rx6.SetReadDeadline(time.Now().Add(5 * time.Second))
					n, cm, a, err := rx6.ReadFrom(buf)
					if err != nil {
						t.Fatalf("IPv6 packet %d of %d to %v: %v", i+1, runs+1, dst, err)
					}
					got, tos, ttl = buf[:n], cm.TrafficClass, cm.HopLimit
					from, _ = netip.AddrFromSlice(a.(*net.IPAddr).IP)
					if !cm.Dst.Equal(dst.AsSlice()) {
						t.Fatalf("IPv6 packet %d: to %v, want %v", i+1, cm.Dst, dst)
					}
				}
				if !bytes.Equal(got, payload) || tos != 0xc0 || ttl != 255 || from != src {
					t.Fatalf("IPv%d packet %d to %v: % x from %v tos %#x ttl %d, want % x from %v tos 0xc0 ttl 255",
						fam, i+1, dst, got, from, tos, ttl, payload, src)
				}
			}
		}
	}
}

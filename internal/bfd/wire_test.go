//go:build linux

package bfd

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestWirePassword runs two vipstack sessions with simple password
// authentication on real UDP sockets in two network namespaces, single
// hop over IPv4 and IPv6 and multihop over IPv4. FRR 8.4's bfdd has no
// authentication (it came with keychains in later releases), so the
// password is tested against ourselves on the wire; the codec tests pin
// the bytes to RFC 5880 section 4.2.
func TestWirePassword(t *testing.T) {
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vbf"})
	h1, h2 := topo.Hosts[0], topo.Hosts[1]
	for _, tc := range []struct {
		name     string
		a, b     netip.Addr
		multihop bool
	}{
		{name: "ipv4", a: h1.IPv4.Addr(), b: h2.IPv4.Addr()},
		{name: "ipv6", a: h1.IPv6.Addr(), b: h2.IPv6.Addr()},
		{name: "ipv4-multihop", a: h1.IPv4.Addr(), b: h2.IPv4.Addr(), multihop: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dial := func(h *testnet.Host, local, peer netip.Addr) *Session {
				var s *Session
				cfg := SessionConfig{Local: local, Peer: peer, Multihop: tc.multihop, DesiredMinTx: 100 * ms, RequiredMinRx: 100 * ms,
					DetectMult: 3, Password: "vipstack-bfd", KeyID: 7}
				if err := h.Do(func() (err error) { s, err = Dial(cfg); return err }); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
			a, b := dial(h1, tc.a, tc.b), dial(h2, tc.b, tc.a)
			waitEvent(t, a, Up, 20*time.Second)
			waitEvent(t, b, Up, 20*time.Second)
			for _, s := range []*Session{a, b} {
				if rej, err := s.Rejected(); len(rej) != 0 {
					t.Errorf("discarded packets: %v, last %v", rej, err)
				}
			}
			a.Close()
			if ev := waitEvent(t, b, Down, 10*time.Second); ev.Diag != DiagControlDetectExpired {
				t.Errorf("Down event %v, want diag %v", ev, DiagControlDetectExpired)
			}
		})
	}
}

// TestWireTTLCheck: a single hop session discards a packet that arrives
// with a TTL below 255 (RFC 5881 section 5), as one from a host beyond a
// router would.
func TestWireTTLCheck(t *testing.T) {
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vbf"})
	h1, h2 := topo.Hosts[0], topo.Hosts[1]
	var s *Session
	cfg := SessionConfig{Local: h2.IPv4.Addr(), Peer: h1.IPv4.Addr(), DesiredMinTx: 100 * ms, RequiredMinRx: 100 * ms, DetectMult: 3}
	if err := h2.Do(func() (err error) { s, err = Dial(cfg); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	pkt, err := (&Packet{State: Down, DetectMult: 3, MyDiscriminator: 2, DesiredMinTx: sec, RequiredMinRx: sec}).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	// The kernel's default TTL (64), from a source port in range.
	var c *net.UDPConn
	if err := h1.Do(func() (err error) {
		c, err = net.ListenUDP("udp4", &net.UDPAddr{IP: h1.IPv4.Addr().AsSlice(), Port: 50001})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testutil.Eventually(t, 10*time.Second, func() error {
		if _, err := c.WriteToUDP(pkt, &net.UDPAddr{IP: h2.IPv4.Addr().AsSlice(), Port: PortSingleHop}); err != nil {
			return err
		}
		rej, last := s.Rejected()
		if rej[ReasonTTL] == 0 {
			return fmt.Errorf("no TTL rejection yet: %v, last %v", rej, last)
		}
		return nil
	})
	_, last := s.Rejected()
	t.Logf("rejected: %v", last)
	if s.State() != Down {
		t.Errorf("state %v after a TTL 64 packet, want Down", s.State())
	}
}

package engine_test

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/vrrp"
)

// unicastPrefix starts the namespace names of the tests in this file.
const unicastPrefix = "vpU"

// sendUnicast writes payload from s's host straight to dst, with TTL 255
// (so only the peer list can reject it).
func sendUnicast(s *rawSender, dst netip.Addr, payload []byte) error {
	h := &ipv4.Header{
		Version:  ipv4.Version,
		Len:      ipv4.HeaderLen,
		TOS:      0xc0,
		TotalLen: ipv4.HeaderLen + len(payload),
		TTL:      255,
		Protocol: vrrp.ProtocolNumber,
		Src:      s.src.AsSlice(),
		Dst:      dst.AsSlice(),
	}
	return s.raw.WriteTo(h, payload, nil)
}

// TestUnicastHearsOnlyPeers: a vipstack master in unicast mode (one
// configured peer) gets well-formed adverts for its VRID with priority 254
// from a host that is not a peer. They are dropped and counted under
// reason not_a_peer; the master keeps the VIP and never leaves MASTER.
// The control is the very same advert from the configured peer: it is
// accepted and the master steps down to BACKUP, so the non-peer's adverts
// would have taken the VIP had they been heard.
func TestUnicastHearsOnlyPeers(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	for _, version := range []int{2, 3} {
		t.Run(fmt.Sprintf("VRRPv%d", version), func(t *testing.T) {
			topo := testnet.New(t, testnet.Options{Hosts: 3, Prefix: unicastPrefix})
			node, peer, stranger := topo.Hosts[0], topo.Hosts[1], topo.Hosts[2]
			vip := netip.MustParseAddr("198.18.0.100")
			const metricsAddr = "127.0.0.1:9650"
			conf := peers.Conf{Version: version, Interval: time.Second, VRID: 51, Priority: 100,
				VIP: netip.PrefixFrom(vip, 32), Source: node.IPv4.Addr(), Peers: []netip.Addr{peer.IPv4.Addr()}}
			adv := vrrp.Advertisement{Version: version, VRID: 51, Priority: 254, Interval: time.Second, Addresses: []netip.Addr{vip}}
			if version == 2 {
				conf.Auth = "managed_api_vip"
				adv.AuthType, adv.AuthData = vrrp.AuthSimple, vrrp.Password(conf.Auth)
			}
			text, err := conf.Render("node1")
			if err != nil {
				t.Fatal(err)
			}
			n, err := peers.Start(node, peers.Vipstack, text, t.TempDir(), bin, "--metrics-addr", metricsAddr)
			if err != nil {
				t.Fatal(err)
			}
			logOnFailure(t, n)
			if _, err := peers.WaitSoleHolder(topo.Hosts, vip, node, 2*time.Second, 20*time.Second); err != nil {
				t.Fatalf("vipstack alone did not become master: %v", err)
			}
			// Each advert is marshalled for its own source (the VRRPv3
			// checksum covers the IP pseudo-header).
			marshal := func(from *testnet.Host) []byte {
				t.Helper()
				b, err := adv.Marshal(from.IPv4.Addr(), node.IPv4.Addr())
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			metrics := func() (dropped, received, toMaster, toBackup float64, err error) {
				m, err := httpGet(node, metricsAddr, "/metrics")
				if err != nil {
					return 0, 0, 0, 0, err
				}
				to := metricSum(m, "vipstack_vrrp_transitions_total", "to")
				return metricSum(m, "vipstack_vrrp_packets_dropped_total", "reason")["not_a_peer"],
					metricSum(m, "vipstack_vrrp_adverts_received_total", "instance")["VI_1"],
					to["MASTER"], to["BACKUP"], nil
			}

			// The stranger: at least 10 adverts dropped as not_a_peer,
			// while the node holds the VIP alone at every look.
			s := newRawSender(t, stranger)
			fromStranger := marshal(stranger)
			var dropped float64
			poll(t, 30*time.Second, "10 adverts from the non-peer counted as not_a_peer", func() (bool, error) {
				if err := sendUnicast(s, node.IPv4.Addr(), fromStranger); err != nil {
					return false, fmt.Errorf("send from the non-peer: %w", err)
				}
				holders, err := peers.Holders(topo.Hosts, vip)
				if err != nil {
					return false, err
				}
				if len(holders) != 1 || holders[0] != node {
					t.Fatalf("while the non-peer advertises priority 254, %v is held by %d hosts, want only %s", vip, len(holders), node.Name)
				}
				d, _, _, _, err := metrics()
				dropped = d
				if err != nil || d < 10 {
					return false, fmt.Errorf("%v not_a_peer drops so far (%v)", d, err)
				}
				return true, nil
			})
			_, received, toMaster, toBackup, err := metrics()
			if err != nil {
				t.Fatal(err)
			}
			if received != 0 || toMaster != 1 {
				t.Errorf("after %v adverts from the non-peer: %v adverts accepted and %v transitions to MASTER, want 0 and 1", dropped, received, toMaster)
			}

			// The control: the same advert from the peer is obeyed.
			p := newRawSender(t, peer)
			fromPeer := marshal(peer)
			poll(t, 30*time.Second, "the peer's priority-254 advert accepted and obeyed", func() (bool, error) {
				if err := sendUnicast(p, node.IPv4.Addr(), fromPeer); err != nil {
					return false, fmt.Errorf("send from the peer: %w", err)
				}
				_, r, _, b, err := metrics()
				if err != nil {
					return false, err
				}
				if r == 0 || b <= toBackup {
					return false, errors.New("the peer's advert not yet accepted with a step down to BACKUP")
				}
				return true, nil
			})
		})
	}
}

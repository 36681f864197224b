package engine

import (
	"fmt"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/vrrp"
	"github.com/vipstack/vipstack/internal/vrrp/transport"
)

// metricBy sums the samples of the counter family name in reg by the value
// of label.
func metricBy(t *testing.T, reg *prometheus.Registry, name, label string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label {
					out[lp.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// TestUnicastHearsOnlyPeers: a vipstack master in unicast mode (one
// configured peer) gets well-formed adverts for its VRID with priority 254
// from a host that is not a peer. They are dropped and counted under
// reason not_a_peer; the master keeps the VIP and never leaves MASTER.
// The control is the very same advert from the configured peer: it is
// accepted and the master steps down to BACKUP, so the non-peer's adverts
// would have taken the VIP had they been heard. (In namespaces the adverts
// came from raw sockets on two other hosts; here they are handed to the
// node's socket as the kernel would, TTL 255.)
func TestUnicastHearsOnlyPeers(t *testing.T) {
	for _, version := range []int{2, 3} {
		t.Run(fmt.Sprintf("VRRPv%d", version), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				node := (&simSegment{}).node("node", "198.18.0.1/24")
				self, peer, stranger := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2"), netip.MustParseAddr("198.18.0.3")
				vip := netip.MustParseAddr("198.18.0.100")
				conf := peers.Conf{Version: version, Interval: time.Second, VRID: 51, Priority: 100,
					VIP: netip.PrefixFrom(vip, 32), Source: self, Peers: []netip.Addr{peer}}
				adv := vrrp.Advertisement{Version: version, VRID: 51, Priority: 254, Interval: time.Second, Addresses: []netip.Addr{vip}}
				if version == 2 {
					conf.Auth = "managed_api_vip"
					adv.AuthType, adv.AuthData = vrrp.AuthSimple, vrrp.Password(conf.Auth)
				}
				reg := prometheus.NewRegistry()
				e, _ := simEngine(t, node, simConf(t, conf, "node1"), nil, func(o *Options) { o.Registry = reg })
				simRun(t, e)
				simWaitSole(t, []*simNode{node}, vip, node, 2*time.Second, 20*time.Second, "vipstack alone did not become master")
				// Each advert is marshalled for its own source (the VRRPv3
				// checksum covers the IP pseudo-header).
				send := func(from netip.Addr) {
					t.Helper()
					b, err := adv.Marshal(from, self)
					if err != nil {
						t.Fatal(err)
					}
					if !node.deliver(4, transport.Packet{Payload: b, Src: from, Dst: self, TTL: 255}) {
						t.Fatal("the node has no IPv4 VRRP socket")
					}
				}
				metrics := func() (dropped, received, toMaster, toBackup float64) {
					to := metricBy(t, reg, "vipstack_vrrp_transitions_total", "to")
					return metricBy(t, reg, "vipstack_vrrp_packets_dropped_total", "reason")["not_a_peer"],
						metricBy(t, reg, "vipstack_vrrp_adverts_received_total", "instance")["VI_1"],
						to["MASTER"], to["BACKUP"]
				}

				// The stranger: at least 10 adverts dropped as not_a_peer,
				// while the node holds the VIP alone at every look.
				var dropped float64
				simWaitFor(t, "10 adverts from the non-peer counted as not_a_peer", func() (bool, string) {
					send(stranger)
					synctest.Wait()
					if !node.has(simLinkName, vip) || stateOf(e) != "MASTER" {
						t.Fatalf("while the non-peer advertises priority 254, the node is %s, holding the VIP %v", stateOf(e), node.has(simLinkName, vip))
					}
					dropped, _, _, _ = metrics()
					return dropped >= 10, fmt.Sprintf("%v not_a_peer drops so far", dropped)
				})
				_, received, toMaster, toBackup := metrics()
				if received != 0 || toMaster != 1 {
					t.Errorf("after %v adverts from the non-peer: %v adverts accepted and %v transitions to MASTER, want 0 and 1", dropped, received, toMaster)
				}

				// The control: the same advert from the peer is obeyed.
				simWaitFor(t, "the peer's priority-254 advert accepted and obeyed", func() (bool, string) {
					send(peer)
					synctest.Wait()
					_, r, _, b := metrics()
					return r > 0 && b > toBackup, "the peer's advert not yet accepted with a step down to BACKUP"
				})
			})
		})
	}
}

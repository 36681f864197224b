package engine

import (
	"net/netip"
	"os"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/vrrp"
	"github.com/vipstack/vipstack/internal/vrrp/transport"
)

// TestBadPacketsDroppedAndCounted: a VRRPv2 master gets, from another
// host, packets that each break exactly one receive rule, all with a
// priority that would make it step down if accepted. It counts each under
// its reason, records the configuration conflicts in its status with the
// peer and kind, and stays the only holder of the VIP. A valid
// lower-priority advert from the same host is the control: it is accepted
// and counted. (In namespaces the packets came from a raw socket on a
// second host and the counts from vipstack's /metrics and /status; here
// they are handed to the node's socket as the kernel would, with their
// TTL, and read from Options.Registry and Status.)
func TestBadPacketsDroppedAndCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := (&simSegment{}).node("node", "198.18.0.1/24")
		other := netip.MustParseAddr("198.18.0.2")
		vip := netip.MustParseAddr("198.18.0.100")
		const auth = "managed_api_vip"
		reg := prometheus.NewRegistry()
		e, _ := simEngine(t, node, simConf(t, peers.Conf{Version: 2, Interval: time.Second, VRID: 51, Priority: 100,
			VIP: netip.PrefixFrom(vip, 32), Auth: auth}, "node1"), nil, func(o *Options) { o.Registry = reg })
		simRun(t, e)
		simWaitSole(t, []*simNode{node}, vip, node, 2*time.Second, 20*time.Second, "vipstack alone did not become master")

		marshal := func(a vrrp.Advertisement) []byte {
			t.Helper()
			b, err := a.Marshal(other, vrrp.MulticastIPv4)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		good := vrrp.Advertisement{Version: 2, VRID: 51, Priority: 254, Interval: time.Second,
			AuthType: vrrp.AuthSimple, AuthData: vrrp.Password(auth), Addresses: []netip.Addr{vip}}
		with := func(f func(*vrrp.Advertisement)) []byte {
			a := good
			f(&a)
			return marshal(a)
		}
		badSum := marshal(good)
		badSum[6] ^= 0xff
		packets := []struct {
			reason  string
			ttl     int
			payload []byte
		}{
			{reason: "too_short", ttl: 255, payload: []byte{0x21, 51, 254, 1}},
			{reason: "bad_ttl", ttl: 64, payload: marshal(good)},
			{reason: "bad_checksum", ttl: 255, payload: badSum},
			{reason: "conflict_auth", ttl: 255, payload: with(func(a *vrrp.Advertisement) { a.AuthData = vrrp.Password("wrongpw!") })},
			{reason: "conflict_version", ttl: 255, payload: with(func(a *vrrp.Advertisement) {
				a.Version, a.AuthType, a.AuthData = 3, 0, [8]byte{}
			})},
			{reason: "conflict_interval", ttl: 255, payload: with(func(a *vrrp.Advertisement) { a.Interval = 2 * time.Second })},
			{reason: "conflict_addresses", ttl: 255, payload: with(func(a *vrrp.Advertisement) {
				a.Addresses = []netip.Addr{netip.MustParseAddr("198.18.0.200")}
			})},
		}
		// The control: valid, but below the master's priority 100.
		control := with(func(a *vrrp.Advertisement) { a.Priority = 50 })
		send := func(payload []byte, ttl int) {
			t.Helper()
			if !node.deliver(4, transport.Packet{Payload: payload, Src: other, Dst: vrrp.MulticastIPv4, TTL: ttl}) {
				t.Fatal("the node has no IPv4 VRRP socket")
			}
		}

		simWaitFor(t, "every drop reason and the control counted", func() (bool, string) {
			for _, p := range packets {
				send(p.payload, p.ttl)
			}
			send(control, 255)
			synctest.Wait()
			dropped := metricBy(t, reg, "vipstack_vrrp_packets_dropped_total", "reason")
			for _, p := range packets {
				if dropped[p.reason] == 0 {
					return false, "no " + p.reason + " drop counted yet"
				}
			}
			if metricBy(t, reg, "vipstack_vrrp_adverts_received_total", "instance")["VI_1"] == 0 {
				return false, "control advert not counted as received yet"
			}
			return true, ""
		})

		if got := metricBy(t, reg, "vipstack_vrrp_transitions_total", "to")["MASTER"]; got != 1 {
			t.Errorf("vipstack_vrrp_transitions_total{to=MASTER} = %v, want 1 (the node must never have left MASTER)", got)
		}
		wantConflicts := map[string]float64{"auth": 1, "version": 1, "interval": 1, "addresses": 1}
		gotConflicts := map[string]float64{}
		for k, v := range metricBy(t, reg, "vipstack_vrrp_vrid_conflicts_total", "kind") {
			gotConflicts[k] = min(v, 1)
		}
		if diff := cmp.Diff(wantConflicts, gotConflicts); diff != "" {
			t.Errorf("vipstack_vrrp_vrid_conflicts_total kinds seen (capped at 1) (-want +got):\n%s", diff)
		}

		st := e.Status()
		if len(st) != 1 {
			t.Fatalf("the status lists %d instances, want 1: %+v", len(st), st)
		}
		in := st[0]
		type conflict struct{ Peer, Kind string }
		var gotList []conflict
		for _, c := range in.Conflicts {
			if c.Count == 0 || c.Detail == "" {
				t.Errorf("status conflict %+v: want a count and a detail", c)
			}
			gotList = append(gotList, conflict{Peer: c.Peer, Kind: c.Kind})
		}
		peer := other.String()
		wantList := []conflict{{Peer: peer, Kind: "addresses"}, {Peer: peer, Kind: "auth"}, {Peer: peer, Kind: "interval"}, {Peer: peer, Kind: "version"}}
		if diff := cmp.Diff(wantList, gotList); diff != "" {
			t.Errorf("status conflicts (-want +got):\n%s", diff)
		}
		if in.State != "MASTER" || in.AdvertsRecv == 0 {
			t.Errorf("status: state %s with %d adverts received, want MASTER with at least 1 (the control)", in.State, in.AdvertsRecv)
		}
		if !node.has(simLinkName, vip) {
			t.Errorf("after the bad packets the node no longer holds %v", vip)
		}
	})
}

// TestAddressSkewAfterReload: after a reload changes an instance's
// addresses, an advertisement listing the old ones is a peer that has not
// reloaded yet: accepted, and no conflict, for addrSkew; a conflict on
// addresses recorded before the reload is forgotten; after addrSkew the
// old list is a conflict again.
func TestAddressSkewAfterReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := (&simSegment{}).node("node", "198.18.0.1/24")
		other := netip.MustParseAddr("198.18.0.2")
		oldVIP, newVIP := netip.MustParseAddr("198.18.0.100"), netip.MustParseAddr("198.18.0.200")
		conf := func(vip netip.Addr) string {
			return simConf(t, peers.Conf{Version: 3, Interval: time.Second, VRID: 51, Priority: 100, VIP: netip.PrefixFrom(vip, 32)}, "node1")
		}
		e, _ := simEngine(t, node, conf(oldVIP), nil)
		simRun(t, e)
		simWaitSole(t, []*simNode{node}, oldVIP, node, 2*time.Second, 20*time.Second, "vipstack alone did not become master")

		send := func(addrs ...netip.Addr) {
			t.Helper()
			a := vrrp.Advertisement{Version: 3, VRID: 51, Priority: 50, Interval: time.Second, Addresses: addrs}
			b, err := a.Marshal(other, vrrp.MulticastIPv4)
			if err != nil {
				t.Fatal(err)
			}
			if !node.deliver(4, transport.Packet{Payload: b, Src: other, Dst: vrrp.MulticastIPv4, TTL: 255}) {
				t.Fatal("the node has no IPv4 VRRP socket")
			}
			synctest.Wait()
		}
		status := func() (recv uint64, kinds []string) {
			t.Helper()
			st := e.Status()
			if len(st) != 1 {
				t.Fatalf("the status lists %d instances, want 1", len(st))
			}
			for _, c := range st[0].Conflicts {
				kinds = append(kinds, c.Kind)
			}
			return st[0].AdvertsRecv, kinds
		}

		send(newVIP) // a peer reloaded before us
		if _, kinds := status(); !slices.Equal(kinds, []string{"addresses"}) {
			t.Fatalf("before the reload, conflicts %v, want [addresses]", kinds)
		}
		if err := os.WriteFile(e.opts.ConfigPath, []byte(conf(newVIP)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := e.Reload(); err != nil {
			t.Fatal(err)
		}
		recv, kinds := status()
		if len(kinds) != 0 {
			t.Errorf("after the reload, conflicts %v, want none (judged against the old list)", kinds)
		}
		send(oldVIP) // a peer not reloaded yet
		if after, kinds := status(); after != recv+1 || len(kinds) != 0 {
			t.Errorf("the old list just after the reload: %d adverts received (was %d), conflicts %v; want it received, no conflict", after, recv, kinds)
		}
		time.Sleep(addrSkew)
		send(oldVIP)
		if _, kinds := status(); !slices.Equal(kinds, []string{"addresses"}) {
			t.Errorf("the old list %v after the reload, conflicts %v, want [addresses]", addrSkew, kinds)
		}
	})
}

package v1alpha1

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/bgp"
)

var addrEq = cmp.Comparer(func(a, b netip.Addr) bool { return a == b })

func TestBGPPeerSpecValidate(t *testing.T) {
	ok := BGPPeerSpec{PeerAddress: "198.18.0.1", PeerASN: 64512, MyASN: 64513}
	with := func(f func(*BGPPeerSpec)) BGPPeerSpec {
		s := ok
		f(&s)
		return s
	}
	tests := []struct {
		name    string
		spec    BGPPeerSpec
		wantErr []string
	}{
		{name: "eBGP", spec: ok},
		{name: "iBGP IPv6 with BFD", spec: BGPPeerSpec{PeerAddress: "fd00::1", PeerASN: 64512, MyASN: 64512, BFD: &PeerBFD{}}},
		{name: "everything set", spec: with(func(s *BGPPeerSpec) {
			s.PeerPort, s.HoldTimeSeconds, s.KeepaliveSeconds, s.EBGPMultihop, s.GracefulRestartSeconds = 1179, 9, 3, 2, 120
			s.BFD = &PeerBFD{IntervalMilliseconds: 50, Multiplier: 3, Multihop: true}
			s.PasswordSecretRef = &SecretKeyRef{Name: "bgp", Key: "password"}
		})},
		{name: "bad address", spec: with(func(s *BGPPeerSpec) { s.PeerAddress = "router1" }),
			wantErr: []string{`spec.peerAddress: "router1": want an IP address`}},
		{name: "no ASNs", spec: with(func(s *BGPPeerSpec) { s.PeerASN, s.MyASN = 0, 0 }),
			wantErr: []string{"spec.myASN: 0 is reserved", "spec.peerASN: 0 is reserved"}},
		{name: "timers", spec: with(func(s *BGPPeerSpec) { s.HoldTimeSeconds, s.KeepaliveSeconds = 2, 5 }),
			wantErr: []string{"spec.holdTimeSeconds: 2s; want 0 (default 90s) or whole seconds 3s..65535s", "spec.keepaliveSeconds: 5s; want 0 (a third of the hold time) or whole seconds below the hold time 2s"}},
		{name: "multihop iBGP", spec: with(func(s *BGPPeerSpec) { s.MyASN, s.EBGPMultihop = 64512, 2 }),
			wantErr: []string{"spec.ebgpMultihop: 2 is set on an iBGP peer"}},
		{name: "single-hop BFD to a multihop peer", spec: with(func(s *BGPPeerSpec) { s.EBGPMultihop, s.BFD = 3, &PeerBFD{} }),
			wantErr: []string{"spec.bfd.multihop: false for a peer 3 hops away"}},
		{name: "BFD interval", spec: with(func(s *BGPPeerSpec) { s.BFD = &PeerBFD{IntervalMilliseconds: 5, Multiplier: 300} }),
			wantErr: []string{"spec.bfd.multiplier: 300: want 1 to 255"}},
		{name: "graceful restart too long", spec: with(func(s *BGPPeerSpec) { s.GracefulRestartSeconds = 5000 }),
			wantErr: []string{"spec.gracefulRestartSeconds: 1h23m20s; want 0 (off) or whole seconds 1s..4095s"}},
		{name: "password without a key", spec: with(func(s *BGPPeerSpec) { s.PasswordSecretRef = &SecretKeyRef{Name: "bgp"} }),
			wantErr: []string{"spec.passwordSecretRef: {Name:bgp Key:}: want the name of a Secret"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want errors %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

func TestBGPPeerSpecPeer(t *testing.T) {
	s := BGPPeerSpec{PeerAddress: "198.18.0.1", PeerASN: 64512, MyASN: 64513, PeerPort: 1179, HoldTimeSeconds: 9,
		KeepaliveSeconds: 3, EBGPMultihop: 2, GracefulRestartSeconds: 120, BFD: &PeerBFD{Multihop: true}}
	local := netip.MustParseAddr("198.18.0.11")
	got, err := s.Peer(local, "secret")
	if err != nil {
		t.Fatal(err)
	}
	want := bgp.Peer{Address: netip.MustParseAddr("198.18.0.1"), ASN: 64512, Port: 1179, LocalAddress: local, Multihop: 2,
		Password: "secret", HoldTime: 9 * time.Second, Keepalive: 3 * time.Second, GracefulRestart: 120 * time.Second,
		BFD: &bgp.BFD{Interval: 300 * time.Millisecond, Multiplier: 3, Multihop: true}}
	if d := cmp.Diff(want, got, addrEq); d != "" {
		t.Errorf("Peer() (-want +got):\n%s", d)
	}
}

func TestGroupBGPValidate(t *testing.T) {
	lp := uint32(200)
	good := GroupBGP{Communities: []string{"64512:100"}, LargeCommunities: []string{"64512:1:2"}, LocalPref: &lp}
	if err := good.Validate(); err != nil {
		t.Errorf("Validate(%+v) = %v, want nil", good, err)
	}
	bad := VIPGroupSpec{BGP: &GroupBGP{Communities: []string{"70000:1"}, LargeCommunities: []string{"1:2"}}}
	err := bad.Validate()
	for _, w := range []string{`spec.bgp.communities[0]: "70000:1" is not a community`, `spec.bgp.largeCommunities[0]: "1:2" is not a large community`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Validate() = %v, want it to contain %q", err, w)
		}
	}
	r := good.Route(netip.MustParseAddr("198.18.0.200"))
	if d := cmp.Diff(bgp.Route{VIP: netip.MustParseAddr("198.18.0.200"), Attributes: bgp.Attributes{Communities: good.Communities,
		LargeCommunities: good.LargeCommunities, LocalPref: &lp}}, r, addrEq); d != "" {
		t.Errorf("Route() (-want +got):\n%s", d)
	}
}

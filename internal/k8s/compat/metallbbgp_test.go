package compat

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

func u32(v uint32) *uint32 { return &v }
func i32(v int32) *int32   { return &v }

func TestConvertBGPAdvertisement(t *testing.T) {
	lp := uint32(150)
	tests := []struct {
		name    string
		spec    BGPAdvertisementSpec
		want    v1alpha1.VIPGroupSpec
		wantErr []string
	}{
		{name: "attributes", spec: BGPAdvertisementSpec{AggregationLength: i32(32), AggregationLengthV6: i32(128), LocalPref: 150,
			Communities: []string{"64512:100", "large:64512:1:2"}, NodeSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"rack": "a"}}}},
			want: v1alpha1.VIPGroupSpec{NodeSelector: map[string]string{"rack": "a"},
				BGP: &v1alpha1.GroupBGP{Communities: []string{"64512:100"}, LargeCommunities: []string{"64512:1:2"}, LocalPref: &lp}}},
		{name: "refused fields", spec: BGPAdvertisementSpec{AggregationLength: i32(24), AggregationLengthV6: i32(64),
			Communities: []string{"no-advertise"}, Peers: []string{"frr"}, ServiceSelectors: []metav1.LabelSelector{{}},
			NodeSelectors: []metav1.LabelSelector{{}, {}}},
			wantErr: []string{"spec.aggregationLength 24: not implemented", "spec.aggregationLengthV6 64: not implemented",
				`spec.communities[0] "no-advertise": names of MetalLB Community objects are not implemented`,
				"spec.peers [frr]: not implemented", "spec.serviceSelectors: not implemented", "spec.nodeSelectors: 2 selectors"}},
		{name: "bad community value", spec: BGPAdvertisementSpec{Communities: []string{"70000:1"}},
			wantErr: []string{`spec.bgp.communities[0]: "70000:1" is not a community`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ConvertBGPAdvertisement(&BGPAdvertisement{Spec: tt.spec})
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tt.want, got); d != "" {
					t.Errorf("spec (-want +got):\n%s", d)
				}
				return
			}
			for _, w := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestConvertBGPPeer(t *testing.T) {
	profiles := []BFDProfile{
		{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Spec: BFDProfileSpec{ReceiveInterval: u32(100), TransmitInterval: u32(100), DetectMultiplier: u32(3)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "odd"}, Spec: BFDProfileSpec{ReceiveInterval: u32(100), TransmitInterval: u32(300), EchoMode: new(true), PassiveMode: new(true), MinimumTTL: u32(10)}},
	}
	tests := []struct {
		name    string
		spec    MetalLBBGPPeerSpec
		want    v1alpha1.BGPPeerSpec
		wantErr []string
	}{
		{name: "full", spec: MetalLBBGPPeerSpec{MyASN: 64513, PeerASN: 64512, Address: "198.18.0.1", Port: 179,
			HoldTime: &metav1.Duration{Duration: 9 * time.Second}, KeepaliveTime: &metav1.Duration{Duration: 3 * time.Second},
			ConnectTime: &metav1.Duration{Duration: 5 * time.Second}, EnableGracefulRestart: true, BFDProfile: "fast", NodeSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"bgp": "on"}}}},
			want: v1alpha1.BGPPeerSpec{PeerAddress: "198.18.0.1", PeerASN: 64512, MyASN: 64513, PeerPort: 179, HoldTimeSeconds: 9, KeepaliveSeconds: 3,
				ConnectRetrySeconds: 5, GracefulRestartSeconds: 120, NodeSelector: map[string]string{"bgp": "on"}, BFD: &v1alpha1.PeerBFD{IntervalMilliseconds: 100, Multiplier: 3}}},
		{name: "multihop", spec: MetalLBBGPPeerSpec{MyASN: 64513, PeerASN: 64512, Address: "198.18.9.1", EBGPMultiHop: true, BFDProfile: "fast"},
			want: v1alpha1.BGPPeerSpec{PeerAddress: "198.18.9.1", PeerASN: 64512, MyASN: 64513, EBGPMultihop: 255,
				BFD: &v1alpha1.PeerBFD{IntervalMilliseconds: 100, Multiplier: 3, Multihop: true}}},
		{name: "refused fields", spec: MetalLBBGPPeerSpec{MyASN: 64513, DynamicASN: "external", Interface: "eth1", SrcAddress: "198.18.0.9",
			RouterID: "1.2.3.4", ConnectTime: &metav1.Duration{}, Password: "x", VRFName: "red", DisableMP: true,
			DualStackAddressFamily: true, BFDProfile: "odd", HoldTime: &metav1.Duration{Duration: 1500 * time.Millisecond}},
			wantErr: []string{"spec.dynamicASN external: not implemented", "spec.interface eth1: not implemented", "spec.sourceAddress 198.18.0.9: not implemented",
				"spec.routerID 1.2.3.4: not implemented", "spec.connectTime 0s: want whole seconds 1s..65535s", "spec.password and passwordSecret: not implemented",
				"spec.vrf red: not implemented", "spec.disableMP: not implemented", "spec.dualStackAddressFamily: not implemented",
				"spec.holdTime 1.5s: want whole seconds", "spec.receiveInterval 100 and spec.transmitInterval 300", "spec.echoMode: not implemented",
				"spec.passiveMode: not implemented", "spec.minimumTtl 10: not implemented"}},
		{name: "secret", spec: MetalLBBGPPeerSpec{MyASN: 64513, PeerASN: 64512, Address: "198.18.0.1", PasswordSecret: corev1.SecretReference{Name: "bgp"}},
			wantErr: []string{"spec.password and passwordSecret: not implemented by vipstack: the agents read passwords from the release namespace only"}},
		{name: "missing profile", spec: MetalLBBGPPeerSpec{MyASN: 64513, PeerASN: 64512, Address: "198.18.0.1", BFDProfile: "slow"},
			wantErr: []string{`spec.bfdProfile "slow": no BFDProfile of that name in namespace metallb-system`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ConvertBGPPeer(&MetalLBBGPPeer{ObjectMeta: metav1.ObjectMeta{Namespace: "metallb-system", Name: "p"}, Spec: tt.spec}, profiles)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tt.want, got); d != "" {
					t.Errorf("spec (-want +got):\n%s", d)
				}
				return
			}
			for _, w := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

// TestAddMetalLBBGP: a pool only a BGPAdvertisement selects is served by
// its group; one an L2Advertisement serves stays with it and the
// BGPAdvertisement is reported; MetalLB's BGPPeer becomes a vipstack
// BGPPeer in the release namespace.
func TestAddMetalLBBGP(t *testing.T) {
	ns := "metallb-system"
	pools := []IPAddressPool{
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bgp"}, Spec: IPAddressPoolSpec{Addresses: []string{"198.18.0.230/31"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "l2"}, Spec: IPAddressPoolSpec{Addresses: []string{"198.18.0.240/31"}}},
	}
	l2 := []L2Advertisement{{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "l2"}, Spec: L2AdvertisementSpec{IPAddressPools: []string{"l2"}}}}
	c := Read(ns, pools, l2, nil)
	advs := []BGPAdvertisement{{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "all"}, Spec: BGPAdvertisementSpec{Communities: []string{"64512:7"}}}}
	peers := []MetalLBBGPPeer{{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "frr"}, Spec: MetalLBBGPPeerSpec{MyASN: 64513, PeerASN: 64512, Address: "198.18.0.1"}}}
	c.AddMetalLBBGP(pools, advs, peers, nil, "vipstack-system")
	groups := map[string]k8s.GroupRef{}
	for _, p := range c.Pools {
		groups[p.Name] = p.Group
	}
	if d := cmp.Diff(map[string]k8s.GroupRef{MetalLBPoolName(ns, "bgp"): {Namespace: ns, Name: "metallb-bgp-all"},
		MetalLBPoolName(ns, "l2"): {Namespace: ns, Name: "metallb-l2"}}, groups); d != "" {
		t.Errorf("pools' groups (-want +got):\n%s", d)
	}
	if _, ok := c.MadeGroup(k8s.GroupRef{Namespace: ns, Name: "metallb-bgp-all"}); !ok {
		t.Errorf("no group made for the BGPAdvertisement: %+v", c.Groups)
	}
	if len(c.Problems) != 1 || !strings.Contains(c.Problems[0].Error(), "BGPAdvertisement metallb-system/all: selects IPAddressPool l2, which VIPGroup metallb-system/metallb-l2") {
		t.Errorf("problems %v, want one: the BGPAdvertisement selects the L2 pool", c.Problems)
	}
	want := []Peer{{Namespace: "vipstack-system", Name: "metallb-frr", Source: "BGPPeer metallb-system/frr",
		Spec: v1alpha1.BGPPeerSpec{PeerAddress: "198.18.0.1", PeerASN: 64512, MyASN: 64513}}}
	if d := cmp.Diff(want, c.Peers); d != "" {
		t.Errorf("peers (-want +got):\n%s", d)
	}
}

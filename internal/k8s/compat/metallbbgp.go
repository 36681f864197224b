package compat

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// MetalLBBGPPeerVersion is the version of MetalLB's BGPPeer vipstack
// reads (its storage version); BGPAdvertisement and BFDProfile are
// MetalLBVersion.
const MetalLBBGPPeerVersion = "v1beta2"

// BGPAdvertisement is MetalLB's BGPAdvertisement, every field of its spec
// listed (those vipstack does not implement are refused by name).
type BGPAdvertisement struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              BGPAdvertisementSpec `json:"spec,omitempty"`
}

// BGPAdvertisementSpec is MetalLB's spec.
type BGPAdvertisementSpec struct {
	AggregationLength      *int32                 `json:"aggregationLength,omitempty"`
	AggregationLengthV6    *int32                 `json:"aggregationLengthV6,omitempty"`
	LocalPref              uint32                 `json:"localPref,omitempty"`
	Communities            []string               `json:"communities,omitempty"`
	IPAddressPools         []string               `json:"ipAddressPools,omitempty"`
	IPAddressPoolSelectors []metav1.LabelSelector `json:"ipAddressPoolSelectors,omitempty"`
	NodeSelectors          []metav1.LabelSelector `json:"nodeSelectors,omitempty"`
	Peers                  []string               `json:"peers,omitempty"`
	ServiceSelectors       []metav1.LabelSelector `json:"serviceSelectors,omitempty"`
}

// MetalLBBGPPeer is MetalLB's BGPPeer (v1beta2), every field listed.
type MetalLBBGPPeer struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              MetalLBBGPPeerSpec `json:"spec"`
}

// MetalLBBGPPeerSpec is MetalLB's spec.
type MetalLBBGPPeerSpec struct {
	MyASN                  uint32                 `json:"myASN"`
	PeerASN                uint32                 `json:"peerASN,omitempty"`
	DynamicASN             string                 `json:"dynamicASN,omitempty"`
	LocalASN               uint32                 `json:"localASN,omitempty"`
	Address                string                 `json:"peerAddress,omitempty"`
	Interface              string                 `json:"interface,omitempty"`
	SrcAddress             string                 `json:"sourceAddress,omitempty"`
	Port                   uint16                 `json:"peerPort,omitempty"`
	HoldTime               *metav1.Duration       `json:"holdTime,omitempty"`
	KeepaliveTime          *metav1.Duration       `json:"keepaliveTime,omitempty"`
	ConnectTime            *metav1.Duration       `json:"connectTime,omitempty"`
	RouterID               string                 `json:"routerID,omitempty"`
	NodeSelectors          []metav1.LabelSelector `json:"nodeSelectors,omitempty"`
	Password               string                 `json:"password,omitempty"`
	PasswordSecret         corev1.SecretReference `json:"passwordSecret,omitempty"`
	BFDProfile             string                 `json:"bfdProfile,omitempty"`
	EnableGracefulRestart  bool                   `json:"enableGracefulRestart,omitempty"`
	EBGPMultiHop           bool                   `json:"ebgpMultiHop,omitempty"`
	VRFName                string                 `json:"vrf,omitempty"`
	DisableMP              bool                   `json:"disableMP,omitempty"`
	DualStackAddressFamily bool                   `json:"dualStackAddressFamily,omitempty"`
}

// BFDProfile is MetalLB's BFDProfile, every field listed.
type BFDProfile struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              BFDProfileSpec `json:"spec,omitempty"`
}

// BFDProfileSpec is MetalLB's spec (milliseconds).
type BFDProfileSpec struct {
	ReceiveInterval  *uint32 `json:"receiveInterval,omitempty"`
	TransmitInterval *uint32 `json:"transmitInterval,omitempty"`
	DetectMultiplier *uint32 `json:"detectMultiplier,omitempty"`
	EchoInterval     *uint32 `json:"echoInterval,omitempty"`
	EchoMode         *bool   `json:"echoMode,omitempty"`
	PassiveMode      *bool   `json:"passiveMode,omitempty"`
	MinimumTTL       *uint32 `json:"minimumTtl,omitempty"`
}

// Peer is a vipstack BGPPeer the controller makes for MetalLB's, in the
// release namespace (where the agents read them).
type Peer struct {
	Namespace, Name string
	Spec            v1alpha1.BGPPeerSpec
	Source          string
}

// BGPGroupName is the name of the VIPGroup made for a BGPAdvertisement,
// in the advertisement's namespace.
func BGPGroupName(adv string) string { return "metallb-bgp-" + adv }

// BGPPeerName is the name of the vipstack BGPPeer made for MetalLB's.
func BGPPeerName(peer string) string { return "metallb-" + peer }

// MetalLB's restart time with enableGracefulRestart (FRR's default).
const metallbRestartTime = 120

var plainCommunity = regexp.MustCompile(`^[0-9]+:[0-9]+$`)

// ConvertBGPAdvertisement turns a BGPAdvertisement into the spec of its
// VIPGroup: its node selector (one, matchLabels) and spec.bgp.
func ConvertBGPAdvertisement(a *BGPAdvertisement) (v1alpha1.VIPGroupSpec, error) {
	var spec v1alpha1.VIPGroupSpec
	b := &v1alpha1.GroupBGP{}
	var errs []error
	if l := a.Spec.AggregationLength; l != nil && *l != 32 {
		errs = append(errs, fmt.Errorf("spec.aggregationLength %d: not implemented by vipstack, which announces host routes (32) only; remove it", *l))
	}
	if l := a.Spec.AggregationLengthV6; l != nil && *l != 128 {
		errs = append(errs, fmt.Errorf("spec.aggregationLengthV6 %d: not implemented by vipstack, which announces host routes (128) only; remove it", *l))
	}
	for i, c := range a.Spec.Communities {
		switch {
		case strings.HasPrefix(c, "large:"):
			b.LargeCommunities = append(b.LargeCommunities, strings.TrimPrefix(c, "large:"))
		case plainCommunity.MatchString(c):
			b.Communities = append(b.Communities, c)
		default:
			errs = append(errs, fmt.Errorf("spec.communities[%d] %q: names of MetalLB Community objects are not implemented by vipstack; write the value (ASN:value or large:global:local1:local2)", i, c))
		}
	}
	if a.Spec.LocalPref != 0 {
		lp := a.Spec.LocalPref
		b.LocalPref = &lp
	}
	if len(a.Spec.Peers) > 0 {
		errs = append(errs, fmt.Errorf("spec.peers %v: not implemented by vipstack (a node announces to every BGPPeer that selects it); remove it", a.Spec.Peers))
	}
	if len(a.Spec.ServiceSelectors) > 0 {
		errs = append(errs, errors.New("spec.serviceSelectors: not implemented by vipstack; put the Services in a pool of their own"))
	}
	sel, err := oneSelector(a.Spec.NodeSelectors)
	if err != nil {
		errs = append(errs, err)
	}
	spec.NodeSelector, spec.BGP = sel, b
	if err := spec.Validate(); err != nil {
		errs = append(errs, err)
	}
	return spec, errors.Join(errs...)
}

// oneSelector converts MetalLB's node selectors: vipstack takes one, of
// matchLabels.
func oneSelector(sels []metav1.LabelSelector) (map[string]string, error) {
	switch n := len(sels); {
	case n > 1:
		return nil, fmt.Errorf("spec.nodeSelectors: %d selectors: vipstack supports one (matchLabels only); label the nodes so that one selector picks them", n)
	case n == 1:
		if len(sels[0].MatchExpressions) > 0 {
			return nil, errors.New("spec.nodeSelectors[0].matchExpressions: not implemented by vipstack; use matchLabels")
		}
		if len(sels[0].MatchLabels) > 0 {
			return maps.Clone(sels[0].MatchLabels), nil
		}
	}
	return nil, nil
}

// ConvertBGPPeer turns MetalLB's BGPPeer (with the BFDProfiles of its
// namespace) into a vipstack BGPPeer's spec.
func ConvertBGPPeer(p *MetalLBBGPPeer, profiles []BFDProfile) (v1alpha1.BGPPeerSpec, error) {
	s := p.Spec
	out := v1alpha1.BGPPeerSpec{PeerAddress: s.Address, PeerASN: s.PeerASN, MyASN: s.MyASN, PeerPort: int32(s.Port)}
	var errs []error
	no := func(field, why string) {
		errs = append(errs, fmt.Errorf("spec.%s: not implemented by vipstack%s", field, why))
	}
	if s.DynamicASN != "" {
		no("dynamicASN "+s.DynamicASN, "; set peerASN")
	}
	if s.LocalASN != 0 {
		no("localASN", "; set myASN")
	}
	if s.Interface != "" {
		no("interface "+s.Interface, " (unnumbered BGP); set peerAddress")
	}
	if s.SrcAddress != "" {
		no("sourceAddress "+s.SrcAddress, ": sessions leave from the node's InternalIP; remove it")
	}
	if s.RouterID != "" {
		no("routerID "+s.RouterID, ": the router ID is the node's IPv4 InternalIP; remove it")
	}
	if s.Password != "" || s.PasswordSecret.Name != "" {
		no("password and passwordSecret", ": the agents read passwords from the release namespace only; make a vipstack BGPPeer there with passwordSecretRef instead")
	}
	if s.VRFName != "" {
		no("vrf "+s.VRFName, "; remove it")
	}
	if s.DisableMP {
		no("disableMP", " (vipstack opens one session per peer address for its family); remove it")
	}
	if s.DualStackAddressFamily {
		no("dualStackAddressFamily", "; make a BGPPeer per family")
	}
	secs := func(field string, d *metav1.Duration) int32 {
		if d == nil {
			return 0
		}
		if d.Duration%time.Second != 0 || d.Duration < 0 {
			errs = append(errs, fmt.Errorf("spec.%s %v: want whole seconds", field, d.Duration))
		}
		return int32(d.Duration / time.Second)
	}
	out.HoldTimeSeconds, out.KeepaliveSeconds = secs("holdTime", s.HoldTime), secs("keepaliveTime", s.KeepaliveTime)
	// connectTime is FRR's "timers connect": the same wait.
	out.ConnectRetrySeconds = secs("connectTime", s.ConnectTime)
	if s.ConnectTime != nil && s.ConnectTime.Duration%time.Second == 0 && (out.ConnectRetrySeconds < 1 || s.ConnectTime.Duration > 65535*time.Second) {
		errs = append(errs, fmt.Errorf("spec.connectTime %v: want whole seconds 1s..65535s", s.ConnectTime.Duration))
	}
	if s.EBGPMultiHop {
		out.EBGPMultihop = 255
	}
	if s.EnableGracefulRestart {
		out.GracefulRestartSeconds = metallbRestartTime
	}
	sel, err := oneSelector(s.NodeSelectors)
	if err != nil {
		errs = append(errs, err)
	}
	out.NodeSelector = sel
	if s.BFDProfile != "" {
		i := slices.IndexFunc(profiles, func(b BFDProfile) bool { return b.Name == s.BFDProfile })
		if i < 0 {
			errs = append(errs, fmt.Errorf("spec.bfdProfile %q: no BFDProfile of that name in namespace %s", s.BFDProfile, p.Namespace))
		} else {
			bfd, err := convertBFD(&profiles[i])
			if err != nil {
				errs = append(errs, fmt.Errorf("spec.bfdProfile %q: BFDProfile %s/%s: %w", s.BFDProfile, p.Namespace, s.BFDProfile, err))
			}
			bfd.Multihop = s.EBGPMultiHop
			out.BFD = bfd
		}
	}
	if err := out.Validate(); err != nil {
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// convertBFD turns a BFDProfile into a peer's BFD: one interval, so
// receiveInterval and transmitInterval must agree.
func convertBFD(b *BFDProfile) (*v1alpha1.PeerBFD, error) {
	s := b.Spec
	out := &v1alpha1.PeerBFD{}
	var errs []error
	rx, tx := s.ReceiveInterval, s.TransmitInterval
	switch {
	case rx != nil && tx != nil && *rx != *tx:
		errs = append(errs, fmt.Errorf("spec.receiveInterval %d and spec.transmitInterval %d: vipstack uses one interval for both; make them equal", *rx, *tx))
	case rx != nil:
		out.IntervalMilliseconds = int32(*rx)
	case tx != nil:
		out.IntervalMilliseconds = int32(*tx)
	}
	if s.DetectMultiplier != nil {
		out.Multiplier = int32(*s.DetectMultiplier)
	}
	if s.EchoMode != nil && *s.EchoMode {
		errs = append(errs, errors.New("spec.echoMode: not implemented by vipstack (asynchronous mode only); remove it"))
	}
	if s.EchoInterval != nil {
		errs = append(errs, errors.New("spec.echoInterval: not implemented by vipstack (no echo mode); remove it"))
	}
	if s.PassiveMode != nil && *s.PassiveMode {
		errs = append(errs, errors.New("spec.passiveMode: not implemented by vipstack (sessions are active); remove it"))
	}
	if s.MinimumTTL != nil && *s.MinimumTTL != 254 {
		errs = append(errs, fmt.Errorf("spec.minimumTtl %d: not implemented by vipstack (multihop sessions accept any TTL); remove it", *s.MinimumTTL))
	}
	return out, errors.Join(errs...)
}

// AddMetalLBBGP adds MetalLB's BGP objects (read from MetalLB's
// namespace) to c, which already holds its pools (Read): each valid
// BGPAdvertisement becomes a VIPGroup that serves the pools it selects
// that no L2Advertisement serves (vipstack announces a pool one way),
// and each valid BGPPeer a vipstack BGPPeer in releaseNS.
func (c *Config) AddMetalLBBGP(pools []IPAddressPool, advs []BGPAdvertisement, peers []MetalLBBGPPeer, profiles []BFDProfile, releaseNS string) {
	advs, peers = slices.Clone(advs), slices.Clone(peers)
	sort.Slice(advs, func(i, j int) bool { return advs[i].Name < advs[j].Name })
	sort.Slice(peers, func(i, j int) bool { return peers[i].Name < peers[j].Name })
	var ok []*BGPAdvertisement
	specs := map[*BGPAdvertisement]v1alpha1.VIPGroupSpec{}
	for i := range advs {
		a := &advs[i]
		spec, err := ConvertBGPAdvertisement(a)
		if err != nil {
			c.Problems = append(c.Problems, Problem{Kind: "BGPAdvertisement", Namespace: a.Namespace, Name: a.Name, Err: err, Refused: true})
			continue
		}
		c.Groups = append(c.Groups, Group{Ref: k8s.GroupRef{Namespace: a.Namespace, Name: BGPGroupName(a.Name)}, Spec: spec,
			Source: "BGPAdvertisement " + a.Namespace + "/" + a.Name, MadeFor: MadeForMetalLB})
		ok = append(ok, a)
		specs[a] = spec
	}
	for i := range pools {
		p := &pools[i]
		j := slices.IndexFunc(c.Pools, func(cp Pool) bool { return cp.Name == MetalLBPoolName(p.Namespace, p.Name) })
		if j < 0 {
			continue // refused
		}
		var sel []*BGPAdvertisement
		for _, a := range ok {
			yes, err := selectsPool(a.Spec.IPAddressPools, a.Spec.IPAddressPoolSelectors, p)
			if err != nil {
				c.Problems = append(c.Problems, Problem{Kind: "BGPAdvertisement", Namespace: a.Namespace, Name: a.Name, Err: err})
				continue
			}
			if yes {
				sel = append(sel, a)
			}
		}
		if len(sel) == 0 {
			continue
		}
		if g := c.Pools[j].Group; !g.IsZero() {
			for _, a := range sel {
				c.Problems = append(c.Problems, Problem{Kind: "BGPAdvertisement", Namespace: a.Namespace, Name: a.Name,
					Err: fmt.Errorf("selects IPAddressPool %s, which VIPGroup %s (an L2Advertisement's) serves by VRRP: vipstack announces a pool one way, so it is not announced by BGP; select the pool by one kind of advertisement", p.Name, g)})
			}
			continue
		}
		first := sel[0]
		c.Pools[j].Group = k8s.GroupRef{Namespace: first.Namespace, Name: BGPGroupName(first.Name)}
		for _, o := range sel[1:] {
			if !maps.Equal(specs[o].NodeSelector, specs[first].NodeSelector) {
				c.Problems = append(c.Problems, Problem{Kind: "BGPAdvertisement", Namespace: o.Namespace, Name: o.Name,
					Err: fmt.Errorf("selects IPAddressPool %s, which BGPAdvertisement %s serves: vipstack serves a pool from one group, with that one's nodes and attributes; make one advertisement per pool", p.Name, first.Name)})
			}
		}
	}
	for i := range peers {
		p := &peers[i]
		spec, err := ConvertBGPPeer(p, profiles)
		if err != nil {
			c.Problems = append(c.Problems, Problem{Kind: "BGPPeer", Namespace: p.Namespace, Name: p.Name, Err: err, Refused: true})
			continue
		}
		c.Peers = append(c.Peers, Peer{Namespace: releaseNS, Name: BGPPeerName(p.Name), Spec: spec, Source: "BGPPeer " + p.Namespace + "/" + p.Name})
	}
}

// selectsPool reports whether an advertisement naming pools and selectors
// announces p (neither: every pool).
func selectsPool(names []string, sels []metav1.LabelSelector, p *IPAddressPool) (bool, error) {
	if len(names) == 0 && len(sels) == 0 {
		return true, nil
	}
	if slices.Contains(names, p.Name) {
		return true, nil
	}
	for i := range sels {
		s, err := metav1.LabelSelectorAsSelector(&sels[i])
		if err != nil {
			return false, fmt.Errorf("spec.ipAddressPoolSelectors[%d]: %w", i, err)
		}
		if s.Matches(labels.Set(p.Labels)) {
			return true, nil
		}
	}
	return false, nil
}

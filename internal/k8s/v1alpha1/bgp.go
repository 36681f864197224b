package v1alpha1

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/vipstack/vipstack/internal/bgp"
)

// BGPPeer is a router the agents announce BGP groups' addresses to. The
// agents read the BGPPeers of the release's namespace (where the
// password Secret must be too: an agent may read Secrets there only).
type BGPPeer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BGPPeerSpec   `json:"spec"`
	Status BGPPeerStatus `json:"status,omitempty"`
}

// BGPPeerSpec is one BGP neighbour of the selected nodes.
type BGPPeerSpec struct {
	// PeerAddress is the router's address.
	PeerAddress string `json:"peerAddress"`
	// PeerASN is the router's AS number; equal to MyASN for iBGP.
	PeerASN uint32 `json:"peerASN"`
	// MyASN is the nodes' AS number; every peer of a node must name the
	// same.
	MyASN uint32 `json:"myASN"`
	// PeerPort is the router's TCP port; 0 is 179.
	PeerPort int32 `json:"peerPort,omitempty"`
	// HoldTimeSeconds and KeepaliveSeconds: 0 is 90 s and a third of the
	// hold time.
	HoldTimeSeconds  int32 `json:"holdTimeSeconds,omitempty"`
	KeepaliveSeconds int32 `json:"keepaliveSeconds,omitempty"`
	// ConnectRetrySeconds is the wait between two attempts to open the
	// session while it is down; 0 is 1 s (bgp.DefaultConnectRetry).
	ConnectRetrySeconds int32 `json:"connectRetrySeconds,omitempty"`
	// EBGPMultihop is the TTL of an eBGP session to a router that is not
	// directly connected (1..255); 0: directly connected.
	EBGPMultihop int32 `json:"ebgpMultihop,omitempty"`
	// PasswordSecretRef names the key of a Secret in the peer's namespace
	// holding the TCP MD5 password (RFC 2385).
	PasswordSecretRef *SecretKeyRef `json:"passwordSecretRef,omitempty"`
	// NodeSelector picks the nodes that peer with this router by label;
	// empty selects every node.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// GracefulRestartSeconds advertises graceful restart (RFC 4724) with
	// this restart time: an agent killed or restarted leaves the router
	// forwarding on its routes until it is back. 0 is off.
	GracefulRestartSeconds int32 `json:"gracefulRestartSeconds,omitempty"`
	// BFD runs a BFD session beside the BGP session; its going Down takes
	// the BGP session down at once.
	BFD *PeerBFD `json:"bfd,omitempty"`
}

// PeerBFD is a peer's BFD session.
type PeerBFD struct {
	// IntervalMilliseconds is the transmit and receive interval (10 to
	// 60000); 0 is 300.
	IntervalMilliseconds int32 `json:"intervalMilliseconds,omitempty"`
	// Multiplier is the detection multiplier (1 to 255); 0 is 3.
	Multiplier int32 `json:"multiplier,omitempty"`
	// Multihop runs RFC 5883 multihop BFD (port 4784).
	Multihop bool `json:"multihop,omitempty"`
}

// BGPPeerStatus is what the controller found of the peer.
type BGPPeerStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// BGPPeerList is a list of BGPPeers.
type BGPPeerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BGPPeer `json:"items"`
}

// Defaults of PeerBFD.
const (
	DefaultBFDIntervalMilliseconds = 300
	DefaultBFDMultiplier           = 3
)

// Peer converts the spec to the speaker's form; local is the session's
// source (the node's InternalIP of the peer's family, needed by BFD) and
// password the Secret's value. Validate says what is wrong.
func (s *BGPPeerSpec) Peer(local netip.Addr, password string) (bgp.Peer, error) {
	addr, err := netip.ParseAddr(s.PeerAddress)
	if err != nil {
		return bgp.Peer{}, fmt.Errorf("spec.peerAddress: %q: want an IP address", s.PeerAddress)
	}
	p := bgp.Peer{Address: addr.Unmap(), ASN: s.PeerASN, Port: int(s.PeerPort), LocalAddress: local,
		Multihop: int(s.EBGPMultihop), Password: password,
		HoldTime: time.Duration(s.HoldTimeSeconds) * time.Second, Keepalive: time.Duration(s.KeepaliveSeconds) * time.Second,
		ConnectRetry:    time.Duration(s.ConnectRetrySeconds) * time.Second,
		GracefulRestart: time.Duration(s.GracefulRestartSeconds) * time.Second}
	if b := s.BFD; b != nil {
		iv, m := b.IntervalMilliseconds, b.Multiplier
		if iv == 0 {
			iv = DefaultBFDIntervalMilliseconds
		}
		if m == 0 {
			m = DefaultBFDMultiplier
		}
		if m < 0 || m > 255 {
			return bgp.Peer{}, fmt.Errorf("spec.bfd.multiplier: %d: want 1 to 255", b.Multiplier)
		}
		p.BFD = &bgp.BFD{Interval: time.Duration(iv) * time.Millisecond, Multiplier: uint8(m), Multihop: b.Multihop}
	}
	return p, nil
}

// Validate checks the spec as the speaker would, with a placeholder for
// the node's address (each node's own is known to its agent only). Each
// error names the spec field, the value and what is accepted.
func (s *BGPPeerSpec) Validate() error {
	p, err := s.Peer(netip.Addr{}, "")
	if err != nil {
		return err
	}
	if p.BFD != nil {
		// The speaker needs the session's source for BFD; the agent sets
		// it to the node's InternalIP.
		p.LocalAddress = netip.IPv4Unspecified()
		if p.Address.Is6() {
			p.LocalAddress = netip.IPv6Unspecified()
		}
	}
	routerID := netip.AddrFrom4([4]byte{192, 0, 2, 1})
	c := bgp.Config{ASN: s.MyASN, RouterID: routerID, Peers: []bgp.Peer{p}}
	if p.Address.Is4() {
		c.NextHopIPv6 = netip.MustParseAddr("2001:db8::1") // IPv6 routes over IPv4: next hop is the node's
	} else {
		c.NextHopIPv4 = routerID
	}
	if s.PasswordSecretRef != nil && (s.PasswordSecretRef.Name == "" || s.PasswordSecretRef.Key == "") {
		return fmt.Errorf("spec.passwordSecretRef: %+v: want the name of a Secret in the peer's namespace and the key holding the password", *s.PasswordSecretRef)
	}
	var errs []error
	for _, e := range unwrapJoin(c.Validate()) {
		var fe *bgp.FieldError
		if errors.As(e, &fe) {
			if fe.Field == "asn" {
				errs = append(errs, fmt.Errorf("spec.myASN: %s", fe.Msg))
				continue
			}
			if f, ok := peerFields[strings.TrimPrefix(fe.Field, "peers[0].")]; ok && strings.HasPrefix(fe.Field, "peers[0].") {
				errs = append(errs, fmt.Errorf("spec.%s: %s", f, fe.Msg))
				continue
			}
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// peerFields maps the speaker's field names to the spec's.
var peerFields = map[string]string{
	"address": "peerAddress", "asn": "peerASN", "port": "peerPort", "multihop": "ebgpMultihop",
	"password": "passwordSecretRef", "hold-time": "holdTimeSeconds", "keepalive": "keepaliveSeconds",
	"graceful-restart": "gracefulRestartSeconds", "bfd.interval": "bfd.intervalMilliseconds",
	"bfd.multiplier": "bfd.multiplier", "bfd.multihop": "bfd.multihop", "local-address": "peerAddress",
}

func unwrapJoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// Route returns the route of vip with the group's attributes.
func (b *GroupBGP) Route(vip netip.Addr) bgp.Route {
	r := bgp.Route{VIP: vip}
	if b != nil {
		r.Communities, r.LargeCommunities = slices.Clone(b.Communities), slices.Clone(b.LargeCommunities)
		if b.LocalPref != nil {
			lp := *b.LocalPref
			r.LocalPref = &lp
		}
	}
	return r
}

// Validate checks the attributes as the speaker would.
func (b *GroupBGP) Validate() error {
	r := b.Route(netip.AddrFrom4([4]byte{192, 0, 2, 1}))
	c := bgp.Config{ASN: 1, RouterID: r.VIP, Peers: []bgp.Peer{{Address: netip.AddrFrom4([4]byte{192, 0, 2, 2}), ASN: 2}}, Routes: []bgp.Route{r}}
	var errs []error
	for _, e := range unwrapJoin(c.Validate()) {
		var fe *bgp.FieldError
		if errors.As(e, &fe) {
			f := strings.TrimPrefix(fe.Field, "routes[0].")
			f = strings.Replace(f, "large-communities", "largeCommunities", 1)
			errs = append(errs, fmt.Errorf("spec.bgp.%s: %s", f, fe.Msg))
			continue
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// DeepCopyInto copies p into out.
func (p *BGPPeer) DeepCopyInto(out *BGPPeer) {
	*out = *p
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.NodeSelector = maps.Clone(p.Spec.NodeSelector)
	if p.Spec.PasswordSecretRef != nil {
		r := *p.Spec.PasswordSecretRef
		out.Spec.PasswordSecretRef = &r
	}
	if p.Spec.BFD != nil {
		b := *p.Spec.BFD
		out.Spec.BFD = &b
	}
	out.Status.Conditions = copyConditions(p.Status.Conditions)
}

// DeepCopy returns a copy of p.
func (p *BGPPeer) DeepCopy() *BGPPeer {
	if p == nil {
		return nil
	}
	out := new(BGPPeer)
	p.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (p *BGPPeer) DeepCopyObject() runtime.Object { return p.DeepCopy() }

// DeepCopyInto copies l into out.
func (l *BGPPeerList) DeepCopyInto(out *BGPPeerList) {
	*out = *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]BGPPeer, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a copy of l.
func (l *BGPPeerList) DeepCopy() *BGPPeerList {
	if l == nil {
		return nil
	}
	out := new(BGPPeerList)
	l.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (l *BGPPeerList) DeepCopyObject() runtime.Object { return l.DeepCopy() }

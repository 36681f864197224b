package bgpconfig

// SpeakerStatus is a node's BGP speaker in its status: each peer with its
// session and BFD state, each route with why it is or is not announced.
type SpeakerStatus struct {
	ASN      uint32        `json:"asn"`
	RouterID string        `json:"router_id"`
	Peers    []PeerStatus  `json:"peers"`
	Routes   []RouteStatus `json:"routes"`
	Error    string        `json:"error,omitempty"` // the BGP implementation did not answer
	// Announces and Withdrawals count the routes the speaker announced
	// and withdrew since it started.
	Announces   uint64 `json:"announces"`
	Withdrawals uint64 `json:"withdrawals"`
	// Wedged says why the BGP implementation stopped answering (a call
	// left unanswered for seconds): the speaker can no longer change
	// what it announces, and only a restart of the process helps. The
	// status endpoint answers 503 then, which fails the liveness probe.
	Wedged string `json:"wedged,omitempty"`
	// Stopped is why the speaker stopped while the process runs on (its
	// start or a peer's addition failed): it announces nothing any more.
	// Unless another start is planned (Retry), the status endpoint
	// answers 503 as for Wedged.
	Stopped string `json:"stopped,omitempty"`
	// Retry says when a process that starts its speaker again after such
	// a stop (the k8s agent) makes the next start ("at 2026-12-03T15:00:04Z",
	// "when the node's BGPPeers or BGP groups change"), "" when it makes
	// none.
	Retry string `json:"retry,omitempty"`
}

// Unhealthy is why a process running this speaker is not live: its BGP
// implementation is wedged, or the speaker stopped and no other start is
// planned. "" when s is nil or neither: a stop that the process retries
// by itself is not one that a restart of it would mend sooner.
func (s *SpeakerStatus) Unhealthy() string {
	switch {
	case s == nil:
		return ""
	case s.Stopped != "" && s.Retry == "":
		return "bgp: the speaker stopped: " + s.Stopped
	case s.Wedged != "":
		return "bgp: " + s.Wedged
	}
	return ""
}

// PeerStatus is one peer.
type PeerStatus struct {
	Address string `json:"address"`
	ASN     uint32 `json:"asn"`
	IBGP    bool   `json:"ibgp"`
	Session string `json:"session"`       // the BGP FSM state, "established" when up
	BFD     string `json:"bfd,omitempty"` // "up", "down", "init", ...; "" without BFD
	// BFDRejected counts the peer's BFD packets discarded, with the last
	// reason.
	BFDRejected string `json:"bfd_rejected,omitempty"`
	HeldDown    string `json:"held_down,omitempty"` // why the node holds the session down
	Advertised  uint64 `json:"advertised"`          // routes sent to the peer
	UpdatesSent uint64 `json:"updates_sent"`        // UPDATE messages sent since the peer was added
}

// RouteStatus is one VIP's host route.
type RouteStatus struct {
	Prefix    string `json:"prefix"`
	Role      string `json:"role"`
	Announced bool   `json:"announced"`
	// Demoted is set while the route is announced with worse attributes
	// (a check VRRP counts as a weight fails; bgp.onCheckFailure demote).
	Demoted bool   `json:"demoted,omitempty"`
	Reason  string `json:"reason"`
}

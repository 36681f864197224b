package ipfailover

import (
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/bgpconfig"
	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/track"
)

// Options configure a Pool.
type Options struct {
	Spec *Spec
	// Version is the VRRP version, 2 or 3; 0 picks 2 (the image's) for
	// IPv4 VIPs and 3 for IPv6, as keepalived switches an IPv6 instance
	// of a vrrp_version 2 configuration to 3.
	Version int
	// AdvertInterval defaults to 1 s (the image's).
	AdvertInterval time.Duration
	// AnnounceRate caps gratuitous ARPs / unsolicited NAs per second and
	// per group (0: unlimited, keepalived's behaviour).
	AnnounceRate int
	// VRIDProbe is how long to listen on the link for VRIDs in use before
	// starting (0: do not listen).
	VRIDProbe time.Duration
	// Nodes, in multicast mode, lists the pool's node addresses so ranks
	// are exact (see RankOf); empty: ranks from the replica count.
	Nodes  []netip.Addr
	Ledger netif.Ledger
	// Announced is the engine's (engine.Options.Announced): it receives
	// when a group's announcements are over.
	Announced chan<- struct{}
	// BGPStopKeepsRoutes, in BGP mode, stops without withdrawing: the
	// routers keep the routes by graceful restart while the node
	// restarts (OPENSHIFT_HA_BGP_GRACEFUL_RESTART).
	BGPStopKeepsRoutes bool
	// BGP runs the pool when its Spec asks for BGP (package
	// ipfailover/bgpmode); nil refuses such a Spec.
	BGP      BGPMode
	Registry prometheus.Registerer
	Logger   *slog.Logger
	Clock    clock.Clock
}

// BGPMode announces a pool by BGP instead of running VRRP
// (OPENSHIFT_HA_BGP_ASN). Package ipfailover/bgpmode has it, with the
// speaker `vipstack node` runs: it is apart so that a pool run by VRRP
// links no BGP speaker (GoBGP, gRPC), and its engine can run from the
// initialisation (docs/design/memory.md).
type BGPMode interface {
	// Start starts announcing s's VIPs from this node.
	Start(s *Spec, n BGPNode) (BGPSpeaker, error)
	// Collector exports the speaker's series from status at each scrape
	// (nil: no speaker yet).
	Collector(status func() *bgpconfig.SpeakerStatus) prometheus.Collector
}

// BGPNode is this node as BGPMode.Start needs it.
type BGPNode struct {
	Interface string
	// Subnets are the node's addresses with their prefixes, Interface's
	// first: they give the router ID and each session's source.
	Subnets []netip.Prefix
	// Check decides whether the node announces the VIPs (nil: always);
	// CheckText says what it is, for the log.
	Check     track.Check
	CheckText string
	Logger    *slog.Logger
	Clock     clock.Clock
}

// BGPSpeaker is a running speaker.
type BGPSpeaker interface {
	Status() *bgpconfig.SpeakerStatus
	// Stop withdraws the routes and stops; Leave stops without
	// withdrawing them, for the routers' graceful restart to keep.
	Stop() error
	Leave() error
}

// Status is what `vipstack ipfailover --status-addr` serves.
type Status struct {
	ConfigName string `json:"config_name"`
	Phase      string `json:"phase"` // "starting", "listening for VRIDs", "running", "stopped"
	Interface  string `json:"interface,omitempty"`
	Address    string `json:"address,omitempty"`
	Mode       string `json:"mode"` // multicast, unicast or bgp
	Ranks      Ranks  `json:"ranks"`
	VIPs       int    `json:"vips"`
	// Share is how many VIPs each rank is preferred master for.
	Share  []int         `json:"share,omitempty"`
	Groups []GroupStatus `json:"groups,omitempty"`
	// Held is how many VIPs this node holds now (announces, by BGP).
	Held int `json:"held"`
	// BGP is the speaker's peers and routes, in BGP mode.
	BGP                *bgpconfig.SpeakerStatus `json:"bgp,omitempty"`
	Check              string                   `json:"check"`
	CheckPassedAtStart bool                     `json:"check_passed_at_start"`
	Heard              []Heard                  `json:"heard,omitempty"`
	Findings           []Finding                `json:"vrid_findings,omitempty"`
	Firewall           []string                 `json:"firewall,omitempty"`
	FirewallError      string                   `json:"firewall_error,omitempty"`
	FirewallPackets    uint64                   `json:"firewall_packets"`
	// Warnings are problems of the pool's layout seen while running,
	// such as two nodes with one rank (see RankWarnings).
	Warnings []string `json:"warnings,omitempty"`
	Error    string   `json:"error,omitempty"`
	// Stalled says why the VRRP engine's loop counts as wedged
	// (engine.Stalled), "" while it answers.
	Stalled string `json:"vrrp_stalled,omitempty"`
}

// Unhealthy is why the pool is not live, "" when it is: its VRRP
// engine's loop is wedged (Stalled), or in BGP mode its speaker is wedged
// or stopped (bgpconfig.SpeakerStatus.Unhealthy). The status endpoint
// then answers 503, which fails the pod's liveness probe.
func (s Status) Unhealthy() string {
	if s.Stalled != "" {
		return "vrrp: " + s.Stalled
	}
	return s.BGP.Unhealthy()
}

// RankWarnings reports a rank shared with another node: a group this node
// is preferred for has another master at the same priority, which only a
// node of the same rank has (every rank's priority in a group differs).
// That happens in multicast mode without a node list when
// OPENSHIFT_HA_REPLICA_COUNT is below the number of nodes (its default,
// 1, puts every node on rank 0) or two addresses collide modulo it; the
// spread is then uneven and the node only backs up.
func RankWarnings(st Status) []string {
	seen := map[string]bool{}
	var out []string
	for _, g := range st.Groups {
		if !g.Preferred || g.State != "BACKUP" || g.Master == "" || g.Master == st.Address || g.MasterPriority != g.Priority || seen[g.Master] {
			continue
		}
		seen[g.Master] = true
		out = append(out, fmt.Sprintf("%s holds group %s at this node's priority %d: it has this node's rank %d too, so the VIPs are not spread "+
			"(%s); set %s to the number of nodes, or give the nodes' addresses (--node-addresses, or %s)",
			g.Master, g.Name, g.Priority, st.Ranks.Self, st.Ranks.Basis, EnvReplicaCount, EnvUnicastPeers))
	}
	return out
}

// GroupStatus is one group as this node runs it.
type GroupStatus struct {
	Name      string `json:"name"`
	VRID      uint8  `json:"vrid"`
	VIPs      int    `json:"vips"`
	Order     []int  `json:"order"`
	Priority  int    `json:"priority"` // base priority of this node
	Preferred bool   `json:"preferred"`
	// From the engine:
	State          string            `json:"state,omitempty"`
	Master         string            `json:"master,omitempty"`
	MasterPriority int               `json:"master_priority,omitempty"`
	Effective      int               `json:"effective_priority,omitempty"`
	Fault          string            `json:"fault,omitempty"`
	Conflicts      []engine.Conflict `json:"conflicts,omitempty"`
}

// ConfigError marks a failure that restarting cannot fix: the
// configuration asks for what the node or the link cannot give (more VRIDs
// than are free, VIPs that route to two interfaces). `vipstack ipfailover`
// exits 2 on it, and its supervisor does not start it again.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// checkNodes refuses a node list that cannot rank this pool's nodes: an
// address of the other family than the VIPs (the node's own address, which
// RankOf adds, is of the VIPs' family, so every node would rank itself last
// and all would share one rank), or one that is not a unicast address.
func checkNodes(s *Spec, nodes []netip.Addr) error {
	for _, a := range nodes {
		if a.Zone() != "" || a.Is4In6() || !a.IsGlobalUnicast() {
			return fmt.Errorf("ipfailover: --node-addresses: %s is not a unicast address of a node (want the nodes' addresses on the pool's interface, e.g. 10.0.0.11,10.0.0.12)", a)
		}
		if a.Is4() != (s.Family() == 4) {
			return fmt.Errorf("ipfailover: --node-addresses: %s is IPv%d but the VIPs (%s) are IPv%d: give the nodes' IPv%d addresses", a, 10-s.Family(), EnvVirtualIPs, s.Family(), s.Family())
		}
	}
	return nil
}

// defaults fills in what Options leave out.
func (o *Options) defaults() {
	if o.Version == 0 {
		o.Version = 2
		if o.Spec != nil && o.Spec.Family() == 6 {
			o.Version = 3
		}
	}
	if o.AdvertInterval == 0 {
		o.AdvertInterval = time.Second
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

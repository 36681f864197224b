package discovery

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
)

// MDNSServiceType is the DNS-SD service type every vipstack node publishes
// (RFC 6763 section 7). vipstack uses its own type rather than the
// "_workstation._tcp" of OpenShift's mdns-publisher: every avahi host on a
// link publishes _workstation._tcp for itself, and the only mark of a
// cluster there is a substring of the instance name. Clusters sharing a
// link are kept apart by the TXT key "cluster", not by the type, so one
// browse answers for every cluster and avahi-browse shows them all. With
// MDNS.OpenShift a node also speaks mdns-publisher's form
// (mdns_openshift.go), taking from _workstation._tcp only the instances
// named as mdns-publisher names them for the cluster.
const MDNSServiceType = "_vipstack._tcp"

// MDNSDefaultTTL is the TTL of every record MDNS publishes when MDNS.TTL is
// zero. RFC 6762 section 10 suggests 120 s for host records and 75 min for
// the rest; vipstack uses one short TTL because the TTL is how long a node
// that vanished without a goodbye (power loss, kill -9, cable cut) stays in
// the answers of the others. Live nodes are not lost by a short TTL: the
// browsers re-query at 80-95 % of it (RFC 6762 section 5.2) and a live node
// answers; the cost is a few small packets per node per TTL.
const MDNSDefaultTTL = 15 * time.Second

// mdnsSRVPort is the port in the SRV record. The service is the node's
// presence, not a port; 9 (discard) is what avahi uses for _workstation._tcp.
const mdnsSRVPort = 9

// MDNS publishes this node and browses the others over multicast DNS
// (RFC 6762) and DNS-based service discovery (RFC 6763). It implements
// Source.
//
// It publishes the host name <Self.Name>.local with A/AAAA records for
// Self.Addrs only (never the other addresses of the interface, and never an
// address in Exclude), and the service instance "<name>@<cluster>" of type
// MDNSServiceType whose SRV record points at that host name and whose TXT
// record carries cluster=, name= and role=. It probes before announcing
// (RFC 6762 section 8), defends its records, answers queries, and sends a
// goodbye (TTL 0) for every record when ctx ends.
//
// With OpenShift it also publishes what OpenShift's mdns-publisher would for
// this node: "<Cluster> Workstation-<name>" of type _workstation._tcp, and
// on masters "<Cluster> Etcd-<name>" of type _etcd-server-ssl._tcp, both
// pointing at the same host name, and browses both types (see
// mdns_openshift.go for what it takes from them).
//
// It reports this node plus every instance of the same cluster that has an
// SRV, a TXT with cluster=<Cluster>, and at least one usable address
// (link-local, loopback and Exclude addresses are dropped). A goodbye
// removes a node at once: RFC 6762 section 10.1 suggests keeping a record
// for one more second, but the records are unique records of the leaving
// host, so there is nobody to refute the goodbye and the second would only
// delay the DNS answer. A record that comes back within 5 s of its goodbye
// is kept but reconfirmed (RFC 6762 section 10.4): asked for twice, and
// dropped 4 s after it came unless a response carries it again. A host
// that is shutting down can answer after its goodbye (mdns-publisher does,
// when it is asked between its goodbye and the close of its sockets), and
// that answer would otherwise keep the node for its whole TTL. A goodbye
// another responder sends for records this node publishes (its own
// mdns-publisher, stopped while the node moves to vipstack, publishes the
// same records) is answered at once with those records (section 10.1's
// rescue), so the others lose the node for one round trip only. A silent
// node goes when its TTL runs out. A record an instance still lacks (an
// address that lapsed while the instance's PTR and SRV live on, as those
// of a dead mdns-publisher node do for 53 minutes) is asked for at once,
// then 1 s, 2 s, 4 s ... up to an hour apart while it stays missing.
//
// A name conflict (another host answering for <name>.local or for the
// instance with other data) is logged as an error; unlike RFC 6762 section
// 9 the node does not rename itself, because its name is its identity in
// the cluster: it probes again (at once if it had announced, after a 5 s
// to 1 min back-off if the probe lost) and stays unpublished meanwhile. An
// avahi-daemon on the same host publishing the same host name causes this.
//
// With Self left zero (no name, role nor address) MDNS only browses: it
// publishes nothing, answers no query, sends no goodbye, and reports the
// peers alone. That is what OpenShift's CoreDNS mdns plugin does (the
// publishing is mdns-publisher's job), and what vipstack's mdns directive
// (internal/dns/mdnsplugin) uses. A browse-only MDNS with OpenShift browses
// only mdns-publisher's two types, as that plugin does, and its Cluster may
// be empty: then every instance whose label has mdns-publisher's form for
// any cluster ("<one word> Workstation[-...]") counts.
//
// Beyond what RFC 6762 requires, unicast replies go from the address the
// query was sent to (so a VIP never appears as their source), and a peer's
// addresses in Exclude are dropped on receipt. A datagram sent to one of
// our unicast addresses from a source outside the subnets of the interface
// it came in on is dropped (section 11, as avahi does): an off-link host
// can neither add nodes nor get answers. Not done: duplicate question
// suppression (section 7.3), passive observation of failures (section
// 10.5: mdns-publisher answers no query for its host or instance name, so
// another browser's unanswered query for them says nothing about its
// life), reverse-mapping PTR records, interfaces that appear after Run
// starts.
type MDNS struct {
	Cluster   string       // cluster name: the TXT key "cluster" and part of the instance name
	Self      Node         // this node: name, role, addresses to publish (never VIPs)
	Interface string       // interface to use ("" = all up multicast-capable non-loopback interfaces)
	Exclude   []netip.Addr // addresses never to advertise nor accept from peers (the VIPs)
	Logger    *slog.Logger // nil = discard

	// OpenShift also publishes this node the way OpenShift's mdns-publisher
	// does and accepts nodes published that way, so that a cluster can move
	// to vipstack node by node (see mdns_openshift.go).
	OpenShift bool

	// TTL of the published records, in whole seconds; 0 = MDNSDefaultTTL.
	TTL time.Duration
	// Clock drives the protocol timers; nil = clock.Real{}.
	Clock clock.Clock
}

// Validate checks m as Run would, without opening a socket: the names, the
// role, the addresses and the TTL. It does not look at the interfaces.
func (m *MDNS) Validate() error {
	_, err := m.config()
	return err
}

// Run publishes and browses until ctx is done, reporting this node and the
// live peers of the same cluster through update whenever that set changes
// (the first report, this node alone, comes at once). update runs on Run's
// goroutine, which also answers the network: it must return quickly. Run
// returns nil after the goodbye once ctx is done, or an error if the
// configuration is invalid or no socket could be opened. The interface list
// and the sockets are taken on the calling goroutine before Run starts any
// other, so calling it on a thread switched into a network namespace runs
// it in that namespace.
func (m *MDNS) Run(ctx context.Context, update func([]Node)) error {
	cfg, err := m.config()
	if err != nil {
		return err
	}
	return m.run(ctx, cfg, update)
}

// mdnsConfig is the validated, normalised form of MDNS.
type mdnsConfig struct {
	cluster    string
	openshift  bool
	browseOnly bool // Self is zero: publish nothing, report the peers only
	self       Node // Addrs filtered by exclude, unmapped, sorted
	exclude    map[netip.Addr]bool
	ttl        time.Duration
	log        *slog.Logger
}

// config validates m without modifying it.
func (m *MDNS) config() (mdnsConfig, error) {
	c := mdnsConfig{exclude: map[netip.Addr]bool{}, log: m.Logger}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if m.Self.Name == "" && m.Self.Role == "" && len(m.Self.Addrs) == 0 {
		return m.browseConfig(c)
	}
	if err := checkLabel(m.Cluster); err != nil {
		return c, fmt.Errorf("mdns: Cluster %q: %w", m.Cluster, err)
	}
	if err := checkLabel(m.Self.Name); err != nil {
		return c, fmt.Errorf("mdns: Self.Name %q: %w", m.Self.Name, err)
	}
	if n := len(m.Self.Name) + 1 + len(m.Cluster); n > 63 {
		return c, fmt.Errorf("mdns: Self.Name %q and Cluster %q make the %d-byte instance label %q; want at most 63 bytes (RFC 6763 section 4.1.1)",
			m.Self.Name, m.Cluster, n, m.Self.Name+"@"+m.Cluster)
	}
	if m.OpenShift {
		// mdns-publisher's instance labels are longer than ours.
		for _, kind := range []string{ocpWorkstation, ocpEtcd} {
			if l := ocpInstanceLabel(m.Cluster, kind, m.Self.Name); len(l) > 63 {
				return c, fmt.Errorf("mdns: Self.Name %q and Cluster %q make the %d-byte OpenShift instance label %q; want at most 63 bytes (RFC 6763 section 4.1.1), or turn OpenShift off",
					m.Self.Name, m.Cluster, len(l), l)
			}
		}
	}
	switch m.Self.Role {
	case "", Master, Worker, Bootstrap:
	default:
		// A role clusterdns does not know makes a master that is no etcd
		// member ("Master", "control-plane"): refuse it here, not there.
		return c, fmt.Errorf("mdns: Self.Role %q: want %s, %s or %s", m.Self.Role, Master, Worker, Bootstrap)
	}
	for i, a := range m.Exclude {
		if !a.IsValid() {
			return c, fmt.Errorf("mdns: Exclude[%d] is the zero address; want an IPv4 or IPv6 address", i)
		}
		c.exclude[a.Unmap().WithZone("")] = true
	}
	self := Node{Name: m.Self.Name, Role: m.Self.Role}
	for i, a := range m.Self.Addrs {
		a = a.Unmap()
		if why := unusableAddr(a); why != "" {
			return c, fmt.Errorf("mdns: Self.Addrs[%d] = %v: %s; want a global or unique-local unicast address of this node", i, a, why)
		}
		if c.exclude[a] || containsAddr(self.Addrs, a) {
			continue
		}
		self.Addrs = append(self.Addrs, a)
	}
	if len(self.Addrs) == 0 {
		return c, fmt.Errorf("mdns: Self.Addrs %v: no address left to publish once Exclude %v is removed; want at least one node address", m.Self.Addrs, m.Exclude)
	}
	sortAddrs(self.Addrs)
	c.self = self
	c.cluster = m.Cluster
	c.openshift = m.OpenShift
	switch {
	case m.TTL == 0:
		c.ttl = MDNSDefaultTTL
	case m.TTL < time.Second || m.TTL > 75*time.Minute || m.TTL%time.Second != 0:
		return c, fmt.Errorf("mdns: TTL %v: want whole seconds from 1s to 75m0s, or 0 for %v", m.TTL, MDNSDefaultTTL)
	default:
		c.ttl = m.TTL
	}
	return c, nil
}

// browseConfig is config for a browse-only MDNS (Self zero).
func (m *MDNS) browseConfig(c mdnsConfig) (mdnsConfig, error) {
	c.browseOnly = true
	c.openshift = m.OpenShift
	if m.Cluster != "" || !m.OpenShift {
		if err := checkLabel(m.Cluster); err != nil {
			return c, fmt.Errorf("mdns: Cluster %q: %w (empty only to browse every cluster's OpenShift instances: Self zero and OpenShift on)", m.Cluster, err)
		}
	}
	c.cluster = m.Cluster
	for i, a := range m.Exclude {
		if !a.IsValid() {
			return c, fmt.Errorf("mdns: Exclude[%d] is the zero address; want an IPv4 or IPv6 address", i)
		}
		c.exclude[a.Unmap().WithZone("")] = true
	}
	// The TTL is that of published records: none here.
	c.ttl = MDNSDefaultTTL
	return c, nil
}

// checkLabel accepts an RFC 1123 host name label.
func checkLabel(s string) error {
	if s == "" || len(s) > 63 {
		return fmt.Errorf("length %d; want 1 to 63 letters, digits and hyphens", len(s))
	}
	for i, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' && i > 0 && i < len(s)-1
		if !ok {
			return fmt.Errorf("character %q at %d; want letters, digits and inner hyphens (RFC 1123)", r, i)
		}
	}
	return nil
}

// unusableAddr says why a is not a node address, or "" if it is one.
func unusableAddr(a netip.Addr) string {
	switch {
	case !a.IsValid():
		return "the zero address"
	case a.Zone() != "":
		return "an address with a zone"
	case a.IsUnspecified():
		return "the unspecified address"
	case a.IsLoopback():
		return "a loopback address"
	case a.IsMulticast():
		return "a multicast address"
	case a.IsLinkLocalUnicast():
		return "a link-local address (it needs a zone, so it is useless in DNS answers)"
	}
	return ""
}

// fromOffLink reports whether a datagram from src to dst, received on an
// interface holding the prefixes ifPrefixes, comes from off the link and
// must be dropped (RFC 6762 section 11). A datagram to the mDNS group is on
// the link whatever its source (routers do not forward the link-local
// groups); one to a unicast address of ours is on the link only if src is
// link-local or inside a prefix of the interface. Without this, a host
// beyond a router that reaches UDP port 5353 could put nodes into the
// cluster's DNS, or replace a node's address with the cache-flush bit, and
// would get answers to its queries (CERT VU#550620). avahi drops such
// responses the same way ("Received non-local response"). An unknown dst
// (no control message) counts as on the link.
func fromOffLink(src, dst netip.Addr, ifPrefixes []netip.Prefix) bool {
	if !dst.IsValid() || dst.IsMulticast() {
		return false
	}
	src = src.Unmap().WithZone("")
	if src.IsLinkLocalUnicast() {
		return false
	}
	for _, p := range ifPrefixes {
		if p.Contains(src) {
			return false
		}
	}
	return true
}

func sortAddrs(a []netip.Addr) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j].Less(a[j-1]); j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// instanceLabel is the DNS-SD instance name (one label, may hold any byte).
func (c mdnsConfig) instanceLabel() string { return c.self.Name + "@" + c.cluster }

// equalNodes reports whether two sorted node lists are the same.
func equalNodes(a, b []Node) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !strings.EqualFold(a[i].Name, b[i].Name) || a[i].Role != b[i].Role || len(a[i].Addrs) != len(b[i].Addrs) {
			return false
		}
		for j := range a[i].Addrs {
			if a[i].Addrs[j] != b[i].Addrs[j] {
				return false
			}
		}
	}
	return true
}

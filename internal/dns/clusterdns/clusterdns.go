package clusterdns

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/fall"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/discovery"
)

// Config is one parsed clusterdns block.
type Config struct {
	Zone    string           // lower-case FQDN, e.g. "managed.example.com."
	API     []netip.Addr     // answers for api and api-int
	Ingress []netip.Addr     // answers for every name under apps
	Nodes   []discovery.Node // node lines, merged with the registry's nodes
	TTL     uint32           // TTL of every answer and of negative answers
	Fall    fall.F           // names in the zone passed on instead of NXDOMAIN

	// NodesOnly makes the handler answer what OpenShift's coredns-mdns
	// answers, for the mdns directive (internal/dns/mdnsplugin): A and AAAA
	// for NODE.ZONE, and SRV for _etcd-server-ssl._tcp.ZONE with the
	// masters' NODE.ZONE as targets. Every other name (the apex, api,
	// apps, etcd-N, short names), and every query type but A, AAAA, SRV
	// and CNAME, goes to the next plugin; a node name asked for a type it
	// has no record of gets an empty NOERROR answer without SOA (the
	// plugin is no zone's authority). API, Ingress and Fall are ignored.
	NodesOnly bool
	// MinSRV is, with NodesOnly, the fewest masters the SRV answer needs:
	// with fewer, _etcd-server-ssl._tcp.ZONE goes to the next plugin.
	MinSRV int
	// Plugin is the directive the handler serves, its Name and log prefix;
	// "" is clusterdns.
	Plugin string
}

// ClusterDNS is the plugin handler. It is safe for concurrent use.
type ClusterDNS struct {
	Next plugin.Handler

	cfg Config
	reg *discovery.Registry
	log clog.P

	// idx is the answer index for the registry version it records. Queries
	// read it without locking; the first query after a registry change
	// rebuilds it under rebuild.
	idx     atomic.Pointer[index]
	rebuild sync.Mutex
}

// New returns a handler for cfg that reads reg on every query and answers
// for its nodes merged with cfg.Nodes (see discovery.Merge; the registry's
// roles come first). It never writes to reg: the node lines belong to this
// handler, so a handler that is set up but never serves (a Corefile that
// fails to load or reload, a check) changes nothing the running one
// answers. A nil reg gives the handler an empty private registry.
func New(cfg Config, reg *discovery.Registry) *ClusterDNS {
	if reg == nil {
		reg = discovery.NewRegistry()
	}
	if cfg.Plugin == "" {
		cfg.Plugin = Name
	}
	return &ClusterDNS{cfg: cfg, reg: reg, log: clog.NewWithPlugin(cfg.Plugin)}
}

// Registry returns the registry the handler reads; sources may feed it
// (Registry.Set or Registry.Feed) while the server runs. It does not hold
// the block's node lines.
func (h *ClusterDNS) Registry() *discovery.Registry { return h.reg }

// Name implements plugin.Handler.
func (h *ClusterDNS) Name() string { return h.cfg.Plugin }

// ServeDNS implements plugin.Handler.
func (h *ClusterDNS) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	state := request.Request{W: w, Req: r}
	if state.QClass() != dns.ClassINET {
		return plugin.NextOrFailure(h.Name(), h.Next, ctx, w, r)
	}
	qname := state.Name()
	idx := h.index()
	if state.QType() == dns.TypePTR && !h.cfg.NodesOnly {
		if names := idx.ptr[qname]; len(names) > 0 {
			m := new(dns.Msg)
			m.SetReply(r)
			m.Authoritative = true
			for _, n := range names {
				m.Answer = append(m.Answer, &dns.PTR{
					Hdr: dns.RR_Header{Name: state.QName(), Rrtype: dns.TypePTR, Class: dns.ClassINET, Ttl: h.cfg.TTL},
					Ptr: n,
				})
			}
			w.WriteMsg(m)
			return dns.RcodeSuccess, nil
		}
	}
	e, inZone := idx.lookup(qname)
	if h.cfg.NodesOnly {
		switch state.QType() {
		case dns.TypeA, dns.TypeAAAA, dns.TypeSRV, dns.TypeCNAME:
		default:
			return plugin.NextOrFailure(h.Name(), h.Next, ctx, w, r)
		}
		if e == nil {
			return plugin.NextOrFailure(h.Name(), h.Next, ctx, w, r)
		}
	}
	if e == nil {
		if !inZone || h.cfg.Fall.Through(qname) {
			return plugin.NextOrFailure(h.Name(), h.Next, ctx, w, r)
		}
		m := new(dns.Msg)
		m.SetRcode(r, dns.RcodeNameError)
		m.Authoritative = true
		m.Ns = []dns.RR{idx.soa()}
		w.WriteMsg(m)
		return dns.RcodeNameError, nil
	}

	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	owner := state.QName()
	ttl := h.cfg.TTL
	qtype := state.QType()
	if qtype == dns.TypeA || qtype == dns.TypeANY {
		m.Answer = appendAddrs(m.Answer, owner, ttl, e.v4)
	}
	if qtype == dns.TypeAAAA || qtype == dns.TypeANY {
		m.Answer = appendAddrs(m.Answer, owner, ttl, e.v6)
	}
	if (qtype == dns.TypeSRV || qtype == dns.TypeANY) && len(e.srv) > 0 {
		for _, t := range e.srv {
			m.Answer = append(m.Answer, &dns.SRV{
				Hdr:      dns.RR_Header{Name: owner, Rrtype: dns.TypeSRV, Class: dns.ClassINET, Ttl: ttl},
				Priority: 0, Weight: 10, Port: etcdPort, Target: t.name,
			})
			m.Extra = appendAddrs(m.Extra, t.name, ttl, t.v4)
			m.Extra = appendAddrs(m.Extra, t.name, ttl, t.v6)
		}
	}
	if qtype == dns.TypeSOA && e.apex {
		// Owned by the name as asked, like every other answer here, so a
		// resolver's 0x20 case randomisation sees its own spelling back.
		soa := idx.soa()
		soa.Header().Name = owner
		m.Answer = append(m.Answer, soa)
	}
	if len(m.Answer) == 0 && !e.bare && !h.cfg.NodesOnly {
		// NODATA: the name exists, without records of this type.
		m.Ns = []dns.RR{idx.soa()}
	}
	w.WriteMsg(m)
	return dns.RcodeSuccess, nil
}

// index returns the answer index for the registry's current version,
// rebuilding it when the registry changed since the last query.
func (h *ClusterDNS) index() *index {
	v := h.reg.Version()
	if idx := h.idx.Load(); idx != nil && idx.version == v {
		return idx
	}
	h.rebuild.Lock()
	defer h.rebuild.Unlock()
	if idx := h.idx.Load(); idx != nil && idx.version >= v {
		return idx // another query rebuilt it meanwhile
	}
	// Read the version before the nodes: if a change lands in between, the
	// index is tagged older than its contents and the next query rebuilds
	// it again, which is harmless; the other order could hide a change.
	v = h.reg.Version()
	idx, skipped := buildIndex(&h.cfg, v, discovery.Merge(h.reg.Nodes(), h.cfg.Nodes))
	for _, s := range skipped {
		h.log.Warningf("zone %s: ignoring node %q from the registry: %s", h.cfg.Zone, s.name, s.why)
	}
	h.idx.Store(idx)
	return idx
}

func appendAddrs(rrs []dns.RR, owner string, ttl uint32, addrs []netip.Addr) []dns.RR {
	for _, a := range addrs {
		if a.Is4() {
			b := a.As4()
			rrs = append(rrs, &dns.A{
				Hdr: dns.RR_Header{Name: owner, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: ttl},
				A:   b[:],
			})
		} else {
			b := a.As16()
			rrs = append(rrs, &dns.AAAA{
				Hdr:  dns.RR_Header{Name: owner, Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: ttl},
				AAAA: b[:],
			})
		}
	}
	return rrs
}

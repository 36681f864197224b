package discovery

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// This file is the mDNS protocol as a pure state machine: mdnsEngine takes
// packets and the current time and returns the packets to send; the socket
// loop in mdns_linux.go owns the clock and the sockets. Nothing here reads
// the time or sleeps, so the tests drive it with plain time values.

const (
	mdnsPort     = 5353
	mdnsDomain   = "local."
	mdnsMetaName = "_services._dns-sd._udp.local." // RFC 6763 section 9
	topBit       = 1 << 15                         // cache-flush bit in rrclass, unicast-response bit in qclass

	probeWait       = 250 * time.Millisecond // RFC 6762 section 8.1
	probeCount      = 3
	announceCount   = 2 // RFC 6762 section 8.3: at least two, one second apart
	announceGap     = time.Second
	conflictBackoff = 5 * time.Second // first wait after a lost name; doubles to conflictMax
	conflictMax     = time.Minute
	tieBreakWait    = time.Second            // RFC 6762 section 8.2
	firstBrowseMax  = 120 * time.Millisecond // RFC 6762 section 5.2: 20-120 ms
	browseMax       = time.Hour
	askAgainAfter   = time.Second // a question is not repeated within a second (RFC 6762 section 5.2)
	legacyTTL       = 10          // RFC 6762 section 6.7

	// A record that comes back within goodbyeMemory of its goodbye is
	// cached but reconfirmed (RFC 6762 section 10.4): asked for
	// reconfirmQueries times, reconfirmGap apart from reconfirmFirst on,
	// and dropped reconfirmWait after the last query unless a response
	// carries it meanwhile. A responder that is shutting down can answer a
	// query after its goodbye (mdns-publisher's zeroconf sends the goodbye
	// before it closes its sockets; a browser that asks about the host
	// whose other service just said goodbye gets that answer), and without
	// the reconfirmation the node would stay for the record's whole TTL
	// (53 minutes for mdns-publisher). A host that really came back, or a
	// cooperating responder that rescues a shared record (section 10.1),
	// answers and stays.
	goodbyeMemory    = 5 * time.Second
	reconfirmFirst   = time.Second
	reconfirmGap     = time.Second
	reconfirmQueries = 2
	reconfirmWait    = 2 * time.Second

	// maxPacket bounds every message sent (RFC 6762 section 17); a query
	// whose questions and known answers would not fit is split, or sent
	// without the known answers that do not fit (section 7.1 allows it: the
	// owners answer them again).
	maxPacket = 9000
	// maxCache bounds the records cached from others: a 2,000-node
	// cluster needs about 10,000. Past it, records not already cached are
	// dropped (and logged once), so that a host flooding the link with
	// instances costs bounded memory and cannot grow our queries.
	maxCache = 16384
	// maxCacheTTL bounds how long a received record is kept (75 minutes,
	// RFC 6762 section 10's longest suggested TTL); a record announced with
	// a TTL of years would otherwise stay until a goodbye.
	maxCacheTTL = 75 * time.Minute
)

// mdnsGroup4 and mdnsGroup6 are the mDNS groups (RFC 6762 section 3).
var (
	mdnsGroup4 = netip.AddrPortFrom(netip.AddrFrom4([4]byte{224, 0, 0, 251}), mdnsPort)
	mdnsGroup6 = netip.AddrPortFrom(netip.MustParseAddr("ff02::fb"), mdnsPort)
)

// inPacket is a received datagram; dst is the address it was sent to
// (the group, or one of ours for a unicast query), if known.
type inPacket struct {
	data    []byte
	from    netip.AddrPort
	dst     netip.Addr
	ifIndex int
}

// outPacket is a datagram to send. With to invalid it goes to the mDNS
// group of family (4, 6, or 0 for both) on ifIndex (0 for every interface).
// A unicast reply goes from src, the address the query was sent to: left
// to itself the kernel may pick another address of the interface, a VIP
// say, and the querier would drop the reply.
type outPacket struct {
	msg     *dns.Msg
	ifIndex int
	family  int
	to      netip.AddrPort
	src     netip.Addr
}

type pubPhase int

const (
	pubWaiting    pubPhase = iota // before the first probe
	pubProbing                    // probes sent: probes
	pubAnnouncing                 // announcements sent: announces
	pubAnnounced
	pubConflict // lost the name; probing again at pubAt
)

// cacheKey identifies one record: owner name, type and rdata, case-folded
// where DNS compares case-insensitively.
type cacheKey struct {
	name  string
	typ   uint16
	rdata string
}

type cacheEntry struct {
	rr        dns.RR // as received, with the flush bit cleared
	ttl       time.Duration
	received  time.Time
	expires   time.Time
	refreshes int       // refresh queries sent since received (RFC 6762 section 5.2: 80, 85, 90, 95 %)
	refreshAt time.Time // next refresh query; zero after the last one
	refreshed time.Time // when the last refresh query was due; zero before the first
	jitter    int       // random part of the refresh times, in thousandths of a percent of the TTL (0-1999)

	// Reconfirmation of a record that came back right after its goodbye
	// (see goodbyeMemory); all zero for any other record. A response that
	// carries the record at or after verifyFrom (the first query) confirms
	// it; at verifyBy it is dropped.
	verifyFrom, verifyBy time.Time
	verifyAt             time.Time // next reconfirmation query; zero after the last
	verifyQueries        int       // reconfirmation queries sent
}

// verifying reports whether c waits for a reconfirmation.
func (c *cacheEntry) verifying() bool { return !c.verifyBy.IsZero() }

// mdnsEngine publishes one node and browses the others.
type mdnsEngine struct {
	cfg mdnsConfig
	rnd *rand.Rand

	svc, instance, host string       // canonical (lower-case, fully qualified) names: vipstack's type, our instance of it, our host
	services            []ownService // what we publish, vipstack's service first
	addrs               []dns.RR     // our A and AAAA records
	own                 []dns.RR     // every record we announce: PTRs, SRVs, TXTs, addresses
	unique              []dns.RR     // the unique records among them (all but the PTRs): what a probe claims
	ownKeys             map[cacheKey]bool
	nsec                *dns.NSEC // asserts the missing address family; nil if both are published
	browse              []string  // canonical service types browsed, vipstack's first

	phase     pubPhase
	pubAt     time.Time
	probes    int
	announces int
	backoff   time.Duration
	lastMcast map[mcastKey]time.Time

	delayed []delayedPacket

	browseAt    time.Time
	browseEvery time.Duration

	// cache holds every record, sets the same records by name and type:
	// lookups touch one RRset, never the whole cache, so that a packet
	// costs time in proportion to the peers, not to their square (a
	// 500-node link sends tens of responses a second). Change both
	// through put and drop only.
	cache map[cacheKey]*cacheEntry
	sets  map[rrsetKey]map[cacheKey]*cacheEntry
	full  bool // the cache reached maxCache (logged once per episode)
	asked map[dns.Question]time.Time
	// goodbyes: when a cached record's goodbye came, for goodbyeMemory.
	goodbyes map[cacheKey]time.Time
	// missAsk: when each question of missing may go out again. Only the
	// questions missing still returns are kept.
	missAsk map[dns.Question]missState
}

// missState is the back-off of one question for a missing record: it may
// be asked again from next on, then gap*2 later (see backOffMissing).
type missState struct {
	next time.Time
	gap  time.Duration
}

// ownService is one service instance this node publishes.
type ownService struct {
	typ, instance string // canonical names
	ptr, meta     *dns.PTR
	srv           *dns.SRV
	txt           *dns.TXT
}

// rrsetKey names an RRset: canonical owner name and type.
type rrsetKey struct {
	name string
	typ  uint16
}

type mcastKey struct {
	key     cacheKey
	ifIndex int
	family  int
}

type delayedPacket struct {
	at time.Time
	p  outPacket
}

func newMDNSEngine(cfg mdnsConfig, rnd *rand.Rand) *mdnsEngine {
	e := &mdnsEngine{
		cfg:       cfg,
		rnd:       rnd,
		svc:       dnsTypeName(MDNSServiceType),
		host:      dns.CanonicalName(cfg.self.Name + "." + mdnsDomain),
		lastMcast: map[mcastKey]time.Time{},
		cache:     map[cacheKey]*cacheEntry{},
		sets:      map[rrsetKey]map[cacheKey]*cacheEntry{},
		asked:     map[dns.Question]time.Time{},
		goodbyes:  map[cacheKey]time.Time{},
		missAsk:   map[dns.Question]missState{},
		backoff:   conflictBackoff,
	}
	host := cfg.self.Name + "." + mdnsDomain
	ttl := uint32(cfg.ttl / time.Second)
	hdr := func(name string, t uint16) dns.RR_Header {
		return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: ttl}
	}
	add := func(typ, label string, port uint16, txt []string) {
		typ += "." + mdnsDomain
		instance := escapeLabel(label) + "." + typ
		e.services = append(e.services, ownService{
			typ:      dns.CanonicalName(typ),
			instance: dns.CanonicalName(instance),
			ptr:      &dns.PTR{Hdr: hdr(typ, dns.TypePTR), Ptr: instance},
			meta:     &dns.PTR{Hdr: hdr(mdnsMetaName, dns.TypePTR), Ptr: typ},
			srv:      &dns.SRV{Hdr: hdr(instance, dns.TypeSRV), Port: port, Target: host},
			txt:      &dns.TXT{Hdr: hdr(instance, dns.TypeTXT), Txt: txt},
		})
	}
	if cfg.browseOnly {
		// Nothing to publish (no services, no addresses, no host name:
		// "" matches no received name). OpenShift's types alone when
		// OpenShift is on, as coredns-mdns browses them.
		e.host = ""
		e.browse = []string{e.svc}
		if cfg.openshift {
			e.browse = []string{dnsTypeName(MDNSWorkstationType), dnsTypeName(MDNSEtcdType)}
		}
		e.ownKeys = map[cacheKey]bool{}
		return e
	}
	add(MDNSServiceType, cfg.instanceLabel(), mdnsSRVPort,
		[]string{"cluster=" + cfg.cluster, "name=" + cfg.self.Name, "role=" + string(cfg.self.Role)})
	e.instance = e.services[0].instance
	e.browse = []string{e.svc}
	if cfg.openshift {
		// mdns-publisher's TXT has no data at all (RFC 6763 section 6.1
		// asks for one empty string): the same records, byte for byte, so
		// that a node whose old mdns-publisher still runs while vipstack
		// starts sees no conflict.
		add(MDNSWorkstationType, ocpInstanceLabel(cfg.cluster, ocpWorkstation, cfg.self.Name), ocpWorkstationPort, nil)
		if cfg.self.Role == Master {
			add(MDNSEtcdType, ocpInstanceLabel(cfg.cluster, ocpEtcd, cfg.self.Name), ocpEtcdPort, nil)
		}
		e.browse = append(e.browse, dnsTypeName(MDNSWorkstationType), dnsTypeName(MDNSEtcdType))
	}
	var has4, has6 bool
	for _, a := range cfg.self.Addrs {
		if a.Is4() {
			has4 = true
			e.addrs = append(e.addrs, &dns.A{Hdr: hdr(host, dns.TypeA), A: a.AsSlice()})
		} else {
			has6 = true
			e.addrs = append(e.addrs, &dns.AAAA{Hdr: hdr(host, dns.TypeAAAA), AAAA: a.AsSlice()})
		}
	}
	for _, s := range e.services {
		e.own = append(e.own, s.ptr)
		e.unique = append(e.unique, s.srv, s.txt)
	}
	e.unique = append(e.unique, e.addrs...)
	e.own = append(e.own, e.unique...)
	if has4 != has6 {
		t := dns.TypeA
		if has6 {
			t = dns.TypeAAAA
		}
		e.nsec = &dns.NSEC{Hdr: hdr(host, dns.TypeNSEC), NextDomain: host, TypeBitMap: []uint16{t}}
	}
	e.ownKeys = map[cacheKey]bool{}
	for _, rr := range e.all() {
		e.ownKeys[keyOf(rr)] = true
	}
	return e
}

// ownInstance reports whether inst (canonical) is one of our instances.
func (e *mdnsEngine) ownInstance(inst string) bool {
	for _, s := range e.services {
		if s.instance == inst {
			return true
		}
	}
	return false
}

// browsed reports whether typ (canonical) is a service type we browse.
func (e *mdnsEngine) browsed(typ string) bool {
	for _, b := range e.browse {
		if b == typ {
			return true
		}
	}
	return false
}

// all is every record this node may send.
func (e *mdnsEngine) all() []dns.RR {
	var rrs []dns.RR
	for _, s := range e.services {
		rrs = append(rrs, s.meta)
	}
	rrs = append(rrs, e.own...)
	if e.nsec != nil {
		rrs = append(rrs, e.nsec)
	}
	return rrs
}

// escapeLabel writes a label in the presentation format miekg/dns parses.
func escapeLabel(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.' || c == ' ' || c == '\'' || c == '@' || c == ';' || c == '(' || c == ')' || c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < ' ' || c > '~':
			b.WriteString("\\" + string(rune('0'+c/100)) + string(rune('0'+c/10%10)) + string(rune('0'+c%10)))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// keyOf returns rr's cache key.
func keyOf(rr dns.RR) cacheKey {
	h := rr.Header()
	c := dns.Copy(rr)
	c.Header().Name = "."
	c.Header().Ttl = 0
	c.Header().Class = dns.ClassINET
	rdata := strings.TrimPrefix(c.String(), c.Header().String())
	switch h.Rrtype {
	case dns.TypePTR, dns.TypeSRV, dns.TypeNSEC:
		rdata = strings.ToLower(rdata)
	}
	return cacheKey{name: dns.CanonicalName(h.Name), typ: h.Rrtype, rdata: rdata}
}

// start begins probing and browsing.
func (e *mdnsEngine) start(now time.Time) []outPacket {
	e.phase = pubWaiting
	if !e.cfg.browseOnly {
		e.pubAt = now.Add(time.Duration(e.rnd.Int64N(int64(probeWait))))
	}
	e.browseAt = now.Add(20*time.Millisecond + time.Duration(e.rnd.Int64N(int64(firstBrowseMax-20*time.Millisecond))))
	e.browseEvery = time.Second
	return nil
}

// next returns when tick must run next.
func (e *mdnsEngine) next() time.Time {
	var t time.Time
	earliest := func(x time.Time) {
		if !x.IsZero() && (t.IsZero() || x.Before(t)) {
			t = x
		}
	}
	earliest(e.pubAt)
	earliest(e.browseAt)
	for _, d := range e.delayed {
		earliest(d.at)
	}
	for _, c := range e.cache {
		earliest(c.expires)
		earliest(c.refreshAt)
		earliest(c.verifyAt)
		earliest(c.verifyBy)
	}
	return t
}

// tick runs whatever is due at now.
func (e *mdnsEngine) tick(now time.Time) []outPacket {
	var out []outPacket
	if !e.pubAt.IsZero() && !now.Before(e.pubAt) {
		out = append(out, e.publishStep(now)...)
	}
	kept := e.delayed[:0]
	for _, d := range e.delayed {
		if now.Before(d.at) {
			kept = append(kept, d)
			continue
		}
		out = append(out, d.p)
	}
	e.delayed = kept
	for k, c := range e.cache {
		switch {
		case !now.Before(c.expires):
			e.drop(k)
		case c.verifying() && !now.Before(c.verifyBy):
			e.cfg.log.Info("mdns: a record came back right after its goodbye and no response confirmed it; dropped",
				"record", strings.ReplaceAll(c.rr.String(), "\t", " "), "queries", c.verifyQueries)
			e.drop(k)
		}
	}
	for k, t := range e.goodbyes {
		if now.Sub(t) >= goodbyeMemory {
			delete(e.goodbyes, k)
		}
	}
	var qs []dns.Question
	if !e.browseAt.IsZero() && !now.Before(e.browseAt) {
		for _, typ := range e.browse {
			qs = append(qs, dns.Question{Name: typ, Qtype: dns.TypePTR, Qclass: dns.ClassINET})
		}
		e.browseAt = now.Add(e.browseEvery)
		e.browseEvery = min(2*e.browseEvery, browseMax)
	}
	var hosts map[string]bool // wantedHosts, computed once if a refresh needs it
	noKnown := map[string]bool{}
	for _, c := range e.cache {
		if c.verifyAt.IsZero() || now.Before(c.verifyAt) {
			continue
		}
		c.verifyQueries++
		c.verifyAt = time.Time{}
		if c.verifyQueries < reconfirmQueries {
			c.verifyAt = now.Add(reconfirmGap)
		}
		qs = append(qs, e.reconfirmQuestions(c.rr, noKnown)...)
	}
	// retry: the refresh questions that go out even if asked within
	// askAgainAfter. The refresh queries of a record with a TTL under 20 s
	// are less than a second apart (0.75 s at the default TTL); the
	// question asked last by this record's own previous refresh is no
	// answer to it, one asked since by another need is.
	retry := map[dns.Question]bool{}
	for _, c := range e.cache {
		if c.refreshAt.IsZero() || now.Before(c.refreshAt) {
			continue
		}
		prev := c.refreshed
		if prev.IsZero() {
			prev = c.received
		}
		c.refreshed = now
		c.refreshes++
		e.scheduleRefresh(c)
		t := c.rr.Header().Rrtype
		if hosts == nil && (t == dns.TypeA || t == dns.TypeAAAA) {
			hosts = e.wantedHosts()
		}
		if q, ok := e.refreshQuestion(c.rr, hosts); ok {
			q.Name = dns.CanonicalName(q.Name)
			if at, ok := e.asked[q]; ok && !at.After(prev) {
				retry[q] = true
			}
			qs = append(qs, q)
			if t == dns.TypeA || t == dns.TypeAAAA {
				qs = append(qs, e.ocpAsk(dns.CanonicalName(c.rr.Header().Name), noKnown)...)
			}
		}
	}
	return append(out, e.query(now, qs, noKnown, retry)...)
}

// ocpAsk returns the questions that make mdns-publisher send the address of
// host again, and marks in noKnown the instances that must not be listed as
// known answers. mdns-publisher never answers a query for its host name,
// nor one for its instance name as a DNS message spells it (it compares the
// name unescaped, and its labels hold a space), only a PTR query for its
// type, with its address in the additional section (TTL 120 s, against
// 3200 s for the PTR: the browse schedule, up to an hour apart, would let
// it lapse). It takes a known answer for its PTR into account, compared the
// same way: never for its labels with a space, but noKnown keeps a label
// without one from suppressing the answer.
func (e *mdnsEngine) ocpAsk(host string, noKnown map[string]bool) []dns.Question {
	var qs []dns.Question
	for _, inst := range e.instances() {
		typ := e.typeOf(inst)
		if typ == e.svc {
			continue
		}
		if srv, ok := e.lookup(inst, dns.TypeSRV, nil); ok && dns.CanonicalName(srv.(*dns.SRV).Target) == host {
			qs = append(qs, dns.Question{Name: typ, Qtype: dns.TypePTR, Qclass: dns.ClassINET})
			noKnown[inst] = true
		}
	}
	return qs
}

// scheduleRefresh sets the next refresh query of c: at 80, 85, 90 and 95 %
// of the TTL plus up to 2 % (RFC 6762 section 5.2). The random part is
// drawn once per received packet, so records that arrived together are
// refreshed together, in one query.
func (e *mdnsEngine) scheduleRefresh(c *cacheEntry) {
	if c.refreshes >= 4 || c.ttl == 0 {
		c.refreshAt = time.Time{}
		return
	}
	pct := 80 + 5*c.refreshes
	c.refreshAt = c.received.Add(c.ttl*time.Duration(pct)/100 + c.ttl*time.Duration(c.jitter)/100000)
}

// refreshQuestion returns the question that refreshes rr, if rr is still
// needed: PTRs of our type, and the SRV, TXT and addresses behind a live
// instance of our cluster. hosts is wantedHosts (needed for addresses).
func (e *mdnsEngine) refreshQuestion(rr dns.RR, hosts map[string]bool) (dns.Question, bool) {
	h := rr.Header()
	q := dns.Question{Name: h.Name, Qtype: h.Rrtype, Qclass: dns.ClassINET}
	switch h.Rrtype {
	case dns.TypePTR:
		return q, true
	case dns.TypeSRV, dns.TypeTXT:
		return q, e.wantInstance(dns.CanonicalName(h.Name))
	case dns.TypeA, dns.TypeAAAA:
		return q, hosts[dns.CanonicalName(h.Name)]
	}
	return q, false
}

// reconfirmQuestions returns the questions whose answer carries rr (RFC
// 6762 section 10.4), and marks in noKnown the instances whose PTR must not
// be listed as a known answer. mdns-publisher answers only a PTR query for
// its type (see ocpAsk): its SRV, TXT and address are asked for that way.
// query never lists a record being reconfirmed as a known answer.
func (e *mdnsEngine) reconfirmQuestions(rr dns.RR, noKnown map[string]bool) []dns.Question {
	h := rr.Header()
	name := dns.CanonicalName(h.Name)
	q := dns.Question{Name: name, Qtype: h.Rrtype, Qclass: dns.ClassINET}
	switch h.Rrtype {
	case dns.TypePTR:
		if inst := dns.CanonicalName(rr.(*dns.PTR).Ptr); e.typeOf(inst) != e.svc {
			noKnown[inst] = true
		}
	case dns.TypeSRV, dns.TypeTXT:
		if typ := e.typeOf(name); typ != "" && typ != e.svc {
			noKnown[name] = true
			return []dns.Question{{Name: typ, Qtype: dns.TypePTR, Qclass: dns.ClassINET}}
		}
	case dns.TypeA, dns.TypeAAAA:
		return append([]dns.Question{q}, e.ocpAsk(name, noKnown)...)
	}
	return []dns.Question{q}
}

// wantInstance: a live PTR points at inst and inst is of our cluster.
func (e *mdnsEngine) wantInstance(inst string) bool {
	typ := e.typeOf(inst)
	if typ == "" {
		return false
	}
	if _, ok := e.lookup(typ, dns.TypePTR, func(rr dns.RR) bool { return dns.CanonicalName(rr.(*dns.PTR).Ptr) == inst }); !ok {
		return false
	}
	return e.ourInstance(inst)
}

// typeOf is the browsed service type inst (canonical) is an instance of, or
// "".
func (e *mdnsEngine) typeOf(inst string) string {
	for _, typ := range e.browse {
		if strings.HasSuffix(inst, "."+typ) {
			return typ
		}
	}
	return ""
}

// ourInstance reports whether inst belongs to our cluster: for vipstack's
// type its TXT, if known, names the cluster; for OpenShift's types (browsed
// with OpenShift on) its label has mdns-publisher's form for the cluster.
func (e *mdnsEngine) ourInstance(inst string) bool {
	typ := e.typeOf(inst)
	switch {
	case typ == "":
		return false
	case typ == e.svc:
		return e.ourTXT(inst)
	}
	label, rest := splitInstance(inst)
	kind := ocpTypeKind(typ)
	return rest == typ && (ocpKindOf(label, e.cfg.cluster) == kind || ocpCutOf(label, e.cfg.cluster, kind))
}

// ourTXT: inst's TXT, if known, names our cluster.
func (e *mdnsEngine) ourTXT(inst string) bool {
	if txt, ok := e.lookup(inst, dns.TypeTXT, nil); ok {
		return txtMap(txt.(*dns.TXT).Txt)["cluster"] == e.cfg.cluster
	}
	return true
}

// instances returns the instances the live PTRs of the browsed service
// types point at that belong to our cluster: the wanted instances.
func (e *mdnsEngine) instances() []string {
	var out []string
	for _, typ := range e.browse {
		for _, c := range e.sets[rrsetKey{typ, dns.TypePTR}] {
			if inst := dns.CanonicalName(c.rr.(*dns.PTR).Ptr); e.typeOf(inst) == typ && e.ourInstance(inst) {
				out = append(out, inst)
			}
		}
	}
	return out
}

// wantedHosts is the set of hosts a wanted instance's SRV targets.
func (e *mdnsEngine) wantedHosts() map[string]bool {
	hosts := map[string]bool{}
	for _, inst := range e.instances() {
		for _, c := range e.sets[rrsetKey{inst, dns.TypeSRV}] {
			hosts[dns.CanonicalName(c.rr.(*dns.SRV).Target)] = true
		}
	}
	return hosts
}

// put caches c under k; drop removes k.
func (e *mdnsEngine) put(k cacheKey, c *cacheEntry) {
	e.cache[k] = c
	sk := rrsetKey{k.name, k.typ}
	set := e.sets[sk]
	if set == nil {
		set = map[cacheKey]*cacheEntry{}
		e.sets[sk] = set
	}
	set[k] = c
}

func (e *mdnsEngine) drop(k cacheKey) {
	delete(e.cache, k)
	if e.full && len(e.cache) < maxCache*9/10 {
		e.full = false
	}
	sk := rrsetKey{k.name, k.typ}
	if set := e.sets[sk]; set != nil {
		delete(set, k)
		if len(set) == 0 {
			delete(e.sets, sk)
		}
	}
}

// lookup returns a cached record of name and type matching f (nil: any),
// the most recently received if several do.
func (e *mdnsEngine) lookup(name string, t uint16, f func(dns.RR) bool) (dns.RR, bool) {
	var best *cacheEntry
	for _, c := range e.sets[rrsetKey{name, t}] {
		if f == nil || f(c.rr) {
			if best == nil || c.received.After(best.received) {
				best = c
			}
		}
	}
	if best == nil {
		return nil, false
	}
	return best.rr, true
}

// query builds the multicast queries for qs (deduplicated, each asked at
// most once a second) with known answers (RFC 6762 section 7.1), in packets
// of at most maxPacket bytes. Sizes are estimated as they grow (knownLen;
// Msg.Len compresses the whole message at every call, too slow to call per
// record) and checked once per packet.
//
// The PTRs that point at an instance in noKnown are never listed as known
// answers (see ocpAsk). The questions in retry are asked even within
// askAgainAfter (see tick).
func (e *mdnsEngine) query(now time.Time, qs []dns.Question, noKnown map[string]bool, retry map[dns.Question]bool) []outPacket {
	const header = 12
	var out []outPacket
	m, size := &dns.Msg{Compress: true}, header
	done := func() {
		out = append(out, outPacket{msg: fit(m)})
		m, size = &dns.Msg{Compress: true}, header
	}
	seen := map[dns.Question]bool{}
	for _, q := range qs {
		q.Name = dns.CanonicalName(q.Name)
		if seen[q] {
			continue
		}
		seen[q] = true
		if t, ok := e.asked[q]; ok && now.Sub(t) < askAgainAfter && !retry[q] {
			continue
		}
		e.asked[q] = now
		var known []dns.RR
		for _, s := range e.services {
			if q.Name == s.typ && q.Qtype == dns.TypePTR {
				// Our own PTR as a known answer: the query comes back to
				// us through multicast loopback, and this keeps us from
				// answering ourselves. Peers ignore known answers they do
				// not own.
				known = append(known, dns.Copy(s.ptr))
			}
		}
		for _, c := range e.sets[rrsetKey{q.Name, q.Qtype}] {
			if ptr, ok := c.rr.(*dns.PTR); ok && noKnown[dns.CanonicalName(ptr.Ptr)] || c.verifying() {
				continue
			}
			left := c.expires.Sub(now)
			if left > c.ttl/2 {
				rr := dns.Copy(c.rr)
				rr.Header().Ttl = uint32(left / time.Second)
				known = append(known, rr)
			}
		}
		qlen := len(q.Name) + 1 + 4 // at least the name's wire length, type and class
		if len(m.Question) > 0 && size+qlen > maxPacket {
			done()
		}
		m.Question = append(m.Question, q)
		size += qlen
		for _, rr := range known {
			n := knownLen(rr)
			if size+n > maxPacket {
				break
			}
			m.Answer = append(m.Answer, rr)
			size += n
		}
	}
	for q, t := range e.asked {
		if now.Sub(t) >= askAgainAfter {
			delete(e.asked, q)
		}
	}
	if len(m.Question) > 0 {
		done()
	}
	return out
}

// knownLen estimates the size of known answer rr in a query that holds its
// owner name (the question's): the owner is a 2-byte pointer, and a PTR's
// target (the only name miekg/dns compresses here) its first label and a
// pointer to the rest, which is the question's name for the PTRs of our
// service type. fit corrects a packet where the estimate was short.
func knownLen(rr dns.RR) int {
	hdr := *rr.Header()
	n := dns.Len(rr) - dns.Len(&dns.ANY{Hdr: hdr}) + 2 + 10
	if ptr, ok := rr.(*dns.PTR); ok {
		if starts := dns.Split(ptr.Ptr); len(starts) > 1 {
			full := dns.Len(&dns.ANY{Hdr: dns.RR_Header{Name: ptr.Ptr}}) - 10
			n -= full - min(full, starts[1]+2) // starts[1] is the first label's text and dot, at least its wire size plus one
		}
	}
	return n
}

// fit drops known answers from the end of m until it packs into maxPacket
// bytes.
func fit(m *dns.Msg) *dns.Msg {
	if m.Len() <= maxPacket {
		return m
	}
	lo, hi := 0, len(m.Answer) // m.Answer[:lo] fits, m.Answer[:hi] does not
	all := m.Answer
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		m.Answer = all[:mid]
		if m.Len() <= maxPacket {
			lo = mid
		} else {
			hi = mid
		}
	}
	m.Answer = all[:lo]
	return m
}

// publishStep advances probing and announcing.
func (e *mdnsEngine) publishStep(now time.Time) []outPacket {
	switch e.phase {
	case pubWaiting, pubConflict:
		e.phase, e.probes = pubProbing, 0
		fallthrough
	case pubProbing:
		if e.probes < probeCount {
			e.probes++
			e.pubAt = now.Add(probeWait)
			return []outPacket{{msg: e.probe(e.probes == 1)}}
		}
		e.cfg.log.Info("mdns: name is ours, announcing", "host", e.host, "instance", e.instance)
		e.backoff = conflictBackoff
		e.phase, e.announces = pubAnnouncing, 0
		fallthrough
	case pubAnnouncing:
		e.announces++
		if e.announces >= announceCount {
			e.phase, e.pubAt = pubAnnounced, time.Time{}
		} else {
			e.pubAt = now.Add(announceGap)
		}
		m := e.response(e.own, nil, true)
		e.noteMcast(now, m.Answer, 0, 0)
		return []outPacket{{msg: m}}
	}
	e.pubAt = time.Time{}
	return nil
}

// probe is an RFC 6762 section 8.1 probe: ANY questions for the instances
// and the host name (the first asking for unicast replies) with the records
// we intend to use in the authority section.
func (e *mdnsEngine) probe(first bool) *dns.Msg {
	class := uint16(dns.ClassINET)
	if first {
		class |= topBit
	}
	m := new(dns.Msg)
	for _, s := range e.services {
		m.Question = append(m.Question, dns.Question{Name: s.srv.Hdr.Name, Qtype: dns.TypeANY, Qclass: class}) // the instances
	}
	m.Question = append(m.Question, dns.Question{Name: e.services[0].srv.Target, Qtype: dns.TypeANY, Qclass: class}) // the host
	for _, rr := range e.unique {
		m.Ns = append(m.Ns, dns.Copy(rr))
	}
	return m
}

// response builds a response; unique records get the cache-flush bit when
// flush is set.
func (e *mdnsEngine) response(answers, extra []dns.RR, flush bool) *dns.Msg {
	m := new(dns.Msg)
	m.Response, m.Authoritative = true, true
	cp := func(rrs []dns.RR) []dns.RR {
		var out []dns.RR
		for _, rr := range rrs {
			rr = dns.Copy(rr)
			if flush && rr.Header().Rrtype != dns.TypePTR {
				rr.Header().Class |= topBit
			}
			out = append(out, rr)
		}
		return out
	}
	m.Answer, m.Extra = cp(answers), cp(extra)
	return m
}

func (e *mdnsEngine) noteMcast(now time.Time, rrs []dns.RR, ifIndex, family int) {
	for _, rr := range rrs {
		e.lastMcast[mcastKey{keyOf(rr), ifIndex, family}] = now
	}
}

// stop returns the goodbye: every published record with TTL 0.
func (e *mdnsEngine) stop() []outPacket {
	announced := e.phase == pubAnnouncing || e.phase == pubAnnounced
	e.phase, e.pubAt, e.browseAt, e.delayed = pubWaiting, time.Time{}, time.Time{}, nil
	if !announced {
		return nil
	}
	m := e.response(e.own, nil, true)
	for _, rr := range m.Answer {
		rr.Header().Ttl = 0
	}
	return []outPacket{{msg: m}}
}

// receive handles one datagram.
func (e *mdnsEngine) receive(now time.Time, p inPacket) []outPacket {
	m := new(dns.Msg)
	if err := m.Unpack(p.data); err != nil || m.Opcode != dns.OpcodeQuery || m.Rcode != dns.RcodeSuccess {
		return nil
	}
	if m.Response {
		if p.from.Port() != mdnsPort { // RFC 6762 section 11
			return nil
		}
		return e.handleResponse(now, m)
	}
	return e.handleQuery(now, m, p)
}

// handleResponse checks for conflicts, caches what we browse, and asks for
// what is missing.
func (e *mdnsEngine) handleResponse(now time.Time, m *dns.Msg) []outPacket {
	rrs := append(append([]dns.RR(nil), m.Answer...), m.Extra...)
	for _, rr := range rrs {
		if e.conflicts(rr) {
			return e.lost(now, rr)
		}
	}
	out := e.rescue(now, rrs)
	// Pass 1: PTR, SRV, TXT (they decide which addresses we want).
	// Pass 2: addresses and NSEC of wanted hosts.
	flushed := map[cacheKey]bool{}
	jitter := e.rnd.IntN(2000)
	var hosts map[string]bool // wantedHosts after pass 1
	for pass := 1; pass <= 2; pass++ {
		if pass == 2 {
			hosts = e.wantedHosts()
		}
		for _, rr := range rrs {
			h := rr.Header()
			if h.Class&^topBit != dns.ClassINET {
				continue
			}
			name := dns.CanonicalName(h.Name)
			if name == e.host || e.ownInstance(name) {
				continue // ours (conflicts were handled above)
			}
			switch h.Rrtype {
			case dns.TypePTR:
				if pass != 1 || !e.browsed(name) {
					continue
				}
				// vipstack's instances are sorted by their TXT later;
				// OpenShift's by their name now, so that the other
				// _workstation._tcp hosts on the link cost nothing.
				inst := dns.CanonicalName(rr.(*dns.PTR).Ptr)
				if e.ownInstance(inst) || e.typeOf(inst) != name || name != e.svc && !e.ourInstance(inst) {
					continue
				}
			case dns.TypeSRV, dns.TypeTXT:
				if typ := e.typeOf(name); pass != 1 || typ == "" || typ != e.svc && !e.ourInstance(name) {
					continue
				}
			case dns.TypeA, dns.TypeAAAA, dns.TypeNSEC:
				if pass != 2 || !hosts[name] {
					continue
				}
			default:
				continue
			}
			e.store(now, rr, flushed, jitter)
		}
	}
	qs, noKnown := e.missing()
	return append(out, e.query(now, e.backOffMissing(now, qs), noKnown, nil)...)
}

// rescue announces again, at once, the records of ours that another
// responder just said goodbye for (RFC 6762 section 10.1: a cooperating
// responder rescues them). That responder is mdns-publisher on this node
// while the node moves to vipstack: it publishes the same records byte for
// byte, host address included, and its goodbye when it is stopped would
// otherwise remove them from every browser (they drop a goodbye'd record at
// once, see store), and the node with them, until something asks again:
// for a browser of mdns-publisher's types only (the DNS's mdns directive)
// that is the next PTR query for the type by any host on the link. The
// browsers reconfirm the records, back right after their goodbye, and we
// answer. Every goodbye is answered, with no rate limit (section 6.2's
// second would leave the address deleted when a master's mdns-publisher
// sends its second goodbye, the Etcd server's, right after the first): one
// packet for one, and only a host that publishes our records sends them.
func (e *mdnsEngine) rescue(now time.Time, rrs []dns.RR) []outPacket {
	if e.phase != pubAnnouncing && e.phase != pubAnnounced {
		return nil
	}
	var again []dns.RR
	for _, rr := range rrs {
		h := rr.Header()
		if h.Ttl != 0 || h.Class&^topBit != dns.ClassINET {
			continue
		}
		k := keyOf(rr)
		if !e.ownKeys[k] {
			continue
		}
		for _, o := range e.all() {
			if keyOf(o) == k && !containsRR(again, o) {
				again = append(again, o)
			}
		}
	}
	if len(again) == 0 {
		return nil
	}
	e.cfg.log.Info("mdns: another responder said goodbye for records this node publishes (its mdns-publisher stopping?); announcing them again",
		"records", len(again))
	e.noteMcast(now, again, 0, 0)
	return []outPacket{{msg: e.response(again, nil, true)}}
}

// backOffMissing returns the questions of qs (from missing) that are due:
// a question goes out at once the first time, then 1 s, 2 s, 4 s ... up to
// an hour apart while the record stays missing, as RFC 6762 section 5.2
// spaces continuous queries; a question missing no longer returns is
// forgotten, so the next need asks at once. Without the back-off every
// response on the link (tens a second on a busy one) asked again, once a
// second: a node on mdns-publisher that died without its goodbye leaves
// its PTR and SRV (TTL 3200 s) behind its address (120 s), and each
// browser asked for that address and mdns-publisher's type for 53
// minutes, each question answered in full by every live mdns-publisher.
func (e *mdnsEngine) backOffMissing(now time.Time, qs []dns.Question) []dns.Question {
	want := make(map[dns.Question]bool, len(qs))
	var due []dns.Question
	for _, q := range qs {
		q.Name = dns.CanonicalName(q.Name)
		if want[q] {
			continue
		}
		want[q] = true
		st, ok := e.missAsk[q]
		if ok && now.Before(st.next) {
			continue
		}
		gap := askAgainAfter
		if ok {
			gap = min(2*st.gap, browseMax)
		}
		e.missAsk[q] = missState{next: now.Add(gap), gap: gap}
		due = append(due, q)
	}
	for q := range e.missAsk {
		if !want[q] {
			delete(e.missAsk, q)
		}
	}
	return due
}

// store caches rr. TTL 0 is a goodbye and removes the record at once (see
// the MDNS doc comment for why not one second later); the record is
// reconfirmed if it comes back soon after (see goodbyeMemory). A cache-flush bit
// ages the other records of the same name and type that are older than a
// second to one second (RFC 6762 section 10.2).
func (e *mdnsEngine) store(now time.Time, rr dns.RR, flushed map[cacheKey]bool, jitter int) {
	rr = dns.Copy(rr)
	h := rr.Header()
	flush := h.Class&topBit != 0
	h.Class &^= topBit
	k := keyOf(rr)
	if h.Ttl == 0 {
		// Only records we hold, and at most maxCache of them: a host
		// announcing and saying goodbye over and over between two timers
		// (which forget the old ones) would grow the memory without bound.
		// Past it, a goodbye'd record that comes back is not reconfirmed.
		if _, ok := e.cache[k]; ok && len(e.goodbyes) < maxCache {
			e.goodbyes[k] = now
		}
		e.drop(k)
		return
	}
	if _, ok := e.cache[k]; !ok && len(e.cache) >= maxCache {
		if !e.full {
			e.full = true
			e.cfg.log.Warn("mdns: cache full; ignoring new records until some expire. A host on the link announces more records than a cluster has",
				"records", len(e.cache), "dropped", strings.ReplaceAll(rr.String(), "\t", " "))
		}
		return
	}
	if flush {
		set := cacheKey{name: k.name, typ: k.typ}
		if !flushed[set] {
			flushed[set] = true
			for ok, c := range e.sets[rrsetKey{k.name, k.typ}] {
				if ok != k && now.Sub(c.received) > time.Second {
					if exp := now.Add(time.Second); exp.Before(c.expires) {
						c.expires = exp
					}
					c.refreshAt = time.Time{}
				}
			}
		}
	}
	ttl := min(time.Duration(h.Ttl)*time.Second, maxCacheTTL)
	c := &cacheEntry{rr: rr, ttl: ttl, received: now, expires: now.Add(ttl), jitter: jitter}
	e.scheduleRefresh(c)
	switch old := e.cache[k]; {
	case old != nil && old.verifying():
		if now.Before(old.verifyFrom) {
			// Still before our first question: no confirmation.
			c.verifyFrom, c.verifyBy, c.verifyAt, c.verifyQueries = old.verifyFrom, old.verifyBy, old.verifyAt, old.verifyQueries
		} else {
			delete(e.goodbyes, k) // confirmed
		}
	default:
		if bye, ok := e.goodbyes[k]; ok && now.Sub(bye) < goodbyeMemory {
			delete(e.goodbyes, k)
			c.verifyFrom = now.Add(reconfirmFirst)
			c.verifyAt = c.verifyFrom
			c.verifyBy = c.verifyFrom.Add(reconfirmGap*(reconfirmQueries-1) + reconfirmWait)
		}
	}
	e.put(k, c)
}

// missing lists the questions for instances without SRV or TXT (vipstack's)
// and for wanted hosts without any address, and the instances whose PTR
// must not be listed as a known answer (see ocpAsk).
func (e *mdnsEngine) missing() ([]dns.Question, map[string]bool) {
	var qs []dns.Question
	noKnown := map[string]bool{}
	for _, inst := range e.instances() {
		ocp := e.typeOf(inst) != e.svc
		types := []uint16{dns.TypeSRV, dns.TypeTXT}
		if ocp {
			types = types[:1] // the TXT of mdns-publisher says nothing
		}
		for _, t := range types {
			if _, ok := e.lookup(inst, t, nil); !ok {
				qs = append(qs, dns.Question{Name: inst, Qtype: t, Qclass: dns.ClassINET})
			}
		}
		srv, ok := e.lookup(inst, dns.TypeSRV, nil)
		if !ok {
			if ocp {
				qs = append(qs, dns.Question{Name: e.typeOf(inst), Qtype: dns.TypePTR, Qclass: dns.ClassINET})
				noKnown[inst] = true
			}
			continue
		}
		host := dns.CanonicalName(srv.(*dns.SRV).Target)
		_, has4 := e.lookup(host, dns.TypeA, nil)
		_, has6 := e.lookup(host, dns.TypeAAAA, nil)
		if !has4 && !has6 {
			qs = append(qs, dns.Question{Name: host, Qtype: dns.TypeA, Qclass: dns.ClassINET},
				dns.Question{Name: host, Qtype: dns.TypeAAAA, Qclass: dns.ClassINET})
			if ocp {
				qs = append(qs, dns.Question{Name: e.typeOf(inst), Qtype: dns.TypePTR, Qclass: dns.ClassINET})
				noKnown[inst] = true
			}
		}
	}
	sort.Slice(qs, func(i, j int) bool {
		if qs[i].Name != qs[j].Name {
			return qs[i].Name < qs[j].Name
		}
		return qs[i].Qtype < qs[j].Qtype
	})
	return qs, noKnown
}

// conflicts reports whether rr, received in a response, contradicts our
// unique records: while probing any record for our names with other data
// (RFC 6762 section 8.1), once announced a record of the same name and type
// with other data (section 9). Goodbyes and our own records never do.
func (e *mdnsEngine) conflicts(rr dns.RR) bool {
	h := rr.Header()
	if h.Ttl == 0 || h.Class&^topBit != dns.ClassINET {
		return false
	}
	name := dns.CanonicalName(h.Name)
	if name != e.host && !e.ownInstance(name) {
		return false
	}
	if e.ownKeys[keyOf(rr)] {
		return false
	}
	switch e.phase {
	case pubProbing:
		return true
	case pubAnnouncing, pubAnnounced:
		for _, o := range e.unique {
			if dns.CanonicalName(o.Header().Name) == name && o.Header().Rrtype == h.Rrtype {
				return true
			}
		}
	}
	return false
}

// lost gives up the names after a conflict. A conflict seen while probing
// means the name is taken: probe again after a back-off (5 s doubling to a
// minute; RFC 6762 section 8.1 asks for at least 5 s after 15 conflicts).
// One seen after announcing may be stale or transient: probe again at once
// (section 9), and back off only if that probe loses.
func (e *mdnsEngine) lost(now time.Time, rr dns.RR) []outPacket {
	wait := time.Duration(0)
	if e.phase == pubProbing {
		wait = e.backoff
		e.backoff = min(2*e.backoff, conflictMax)
	}
	e.cfg.log.Error("mdns: name conflict: another host (or an avahi-daemon on this one publishing the same host name) "+
		"answers for our name with other data; this node is not published until it goes away. Give each node a unique name",
		"record", strings.ReplaceAll(rr.String(), "\t", " "), "probing_again_in", wait)
	e.phase = pubConflict
	e.pubAt = now.Add(wait)
	e.delayed = nil
	return nil
}

// handleQuery answers a query, or during probing runs the simultaneous
// probe tie-break (RFC 6762 section 8.2).
func (e *mdnsEngine) handleQuery(now time.Time, m *dns.Msg, p inPacket) []outPacket {
	switch e.phase {
	case pubProbing:
		if e.losesTieBreak(m.Ns) {
			e.cfg.log.Info("mdns: another host probes for our names with later data; probing again in a second")
			e.phase, e.pubAt = pubConflict, now.Add(tieBreakWait)
		}
		return nil
	case pubAnnouncing, pubAnnounced:
	default:
		return nil
	}
	legacy := p.from.Port() != mdnsPort
	isProbe := len(m.Ns) > 0
	var answers, extra []dns.RR
	shared, unicast := false, legacy
	add := func(list *[]dns.RR, rrs ...dns.RR) {
		for _, rr := range rrs {
			if !containsRR(*list, rr) {
				*list = append(*list, rr)
			}
		}
	}
	addrs := func(t uint16) []dns.RR {
		var out []dns.RR
		for _, rr := range e.addrs {
			if t == dns.TypeANY || rr.Header().Rrtype == t {
				out = append(out, rr)
			}
		}
		return out
	}
	for _, q := range m.Question {
		if c := q.Qclass &^ topBit; c != dns.ClassINET && c != dns.ClassANY {
			continue
		}
		if q.Qclass&topBit != 0 {
			unicast = true
		}
		any := q.Qtype == dns.TypeANY
		name := dns.CanonicalName(q.Name)
		switch name {
		case mdnsMetaName:
			if any || q.Qtype == dns.TypePTR {
				for _, s := range e.services {
					add(&answers, s.meta)
				}
				shared = true
			}
		case e.host:
			got := addrs(q.Qtype)
			add(&answers, got...)
			if e.nsec != nil {
				if len(got) == 0 && (q.Qtype == dns.TypeA || q.Qtype == dns.TypeAAAA) {
					add(&answers, e.nsec) // negative answer (RFC 6762 section 6.1)
				} else {
					add(&extra, e.nsec)
				}
			}
		}
		for _, s := range e.services {
			switch name {
			case s.typ:
				if any || q.Qtype == dns.TypePTR {
					add(&answers, s.ptr)
					add(&extra, s.srv, s.txt)
					add(&extra, addrs(dns.TypeANY)...)
					if e.nsec != nil {
						add(&extra, e.nsec)
					}
					shared = true
				}
			case s.instance:
				if any || q.Qtype == dns.TypeSRV {
					add(&answers, s.srv)
					add(&extra, addrs(dns.TypeANY)...)
				}
				if any || q.Qtype == dns.TypeTXT {
					add(&answers, s.txt)
				}
			}
		}
	}
	// Known-answer suppression (RFC 6762 section 7.1).
	if !legacy {
		answers = suppressKnown(answers, m.Answer)
	}
	if len(answers) == 0 {
		return nil
	}
	extra = without(extra, answers)
	family := 4
	if p.from.Addr().Is6() && !p.from.Addr().Is4In6() {
		family = 6
	}
	if legacy {
		r := e.response(answers, extra, false)
		r.Id = m.Id
		r.Question = m.Question
		for _, rr := range append(r.Answer, r.Extra...) {
			rr.Header().Ttl = min(rr.Header().Ttl, legacyTTL)
		}
		return []outPacket{{msg: r, ifIndex: p.ifIndex, to: p.from, src: e.replySource(p)}}
	}
	if unicast {
		return []outPacket{{msg: e.response(answers, extra, true), ifIndex: p.ifIndex, to: p.from, src: e.replySource(p)}}
	}
	// Multicast: a record goes out at most once a second per link (RFC 6762
	// section 6.2), a quarter second when defending against a probe.
	limit := time.Second
	if isProbe {
		limit = probeWait
	}
	kept := answers[:0]
	for _, rr := range answers {
		if t, ok := e.lastMcast[mcastKey{keyOf(rr), p.ifIndex, family}]; ok && now.Sub(t) < limit {
			continue
		}
		kept = append(kept, rr)
	}
	if len(kept) == 0 {
		return nil
	}
	e.noteMcast(now, kept, p.ifIndex, family)
	out := outPacket{msg: e.response(kept, extra, true), ifIndex: p.ifIndex, family: family}
	if shared && !isProbe {
		// Shared records wait 20-120 ms so that several responders do not
		// answer at the same instant (RFC 6762 section 6).
		at := now.Add(20*time.Millisecond + time.Duration(e.rnd.Int64N(int64(100*time.Millisecond))))
		e.delayed = append(e.delayed, delayedPacket{at: at, p: out})
		return nil
	}
	return []outPacket{out}
}

// replySource is the source address for a unicast reply to query p: the
// address p was sent to if that is one of ours, else (a query to the group)
// our first node address of the querier's family, else the kernel's choice.
// Never a VIP: the kernel, left to choose, prefers a /128 VIP over the node
// address and the querier drops a reply from an address it did not ask.
func (e *mdnsEngine) replySource(p inPacket) netip.Addr {
	if p.dst.IsValid() && !p.dst.IsMulticast() && !p.dst.IsUnspecified() {
		return p.dst
	}
	for _, a := range e.cfg.self.Addrs {
		if a.Is4() == p.from.Addr().Is4() {
			return a
		}
	}
	return netip.Addr{}
}

// losesTieBreak compares, name by name, the records another host proposes
// in its probe with ours (RFC 6762 section 8.2): we lose if theirs sort
// later.
func (e *mdnsEngine) losesTieBreak(ns []dns.RR) bool {
	names := []string{e.host}
	for _, s := range e.services {
		names = append(names, s.instance)
	}
	for _, name := range names {
		var theirs, ours [][]byte
		for _, rr := range ns {
			if dns.CanonicalName(rr.Header().Name) == name {
				theirs = append(theirs, canonicalRData(rr))
			}
		}
		if len(theirs) == 0 {
			continue
		}
		for _, rr := range e.unique {
			if dns.CanonicalName(rr.Header().Name) == name {
				ours = append(ours, canonicalRData(rr))
			}
		}
		sort.Slice(theirs, func(i, j int) bool { return bytes.Compare(theirs[i], theirs[j]) < 0 })
		sort.Slice(ours, func(i, j int) bool { return bytes.Compare(ours[i], ours[j]) < 0 })
		for i := 0; ; i++ {
			if i == len(ours) || i == len(theirs) {
				if len(theirs) > len(ours) {
					return true
				}
				break
			}
			if c := bytes.Compare(ours[i], theirs[i]); c != 0 {
				if c < 0 {
					return true
				}
				break
			}
		}
	}
	return false
}

// canonicalRData is class, type and uncompressed rdata, the order RFC 6762
// section 8.2 compares records in.
func canonicalRData(rr dns.RR) []byte {
	c := dns.Copy(rr)
	c.Header().Name = "."
	c.Header().Ttl = 0
	c.Header().Class &^= topBit
	buf := make([]byte, dns.Len(c)+16)
	n, err := dns.PackRR(c, buf, 0, nil, false)
	if err != nil || n < 11 {
		return nil
	}
	// Packed: name "." (1), type (2), class (2), ttl (4), rdlength (2), rdata.
	out := append([]byte{}, buf[3:5]...) // class
	out = append(out, buf[1:3]...)       // type
	return append(out, buf[11:n]...)
}

func containsRR(list []dns.RR, rr dns.RR) bool {
	k := keyOf(rr)
	for _, x := range list {
		if keyOf(x) == k {
			return true
		}
	}
	return false
}

func without(list, drop []dns.RR) []dns.RR {
	var out []dns.RR
	for _, rr := range list {
		if !containsRR(drop, rr) {
			out = append(out, rr)
		}
	}
	return out
}

// suppressKnown drops answers the querier listed with at least half their
// TTL left.
func suppressKnown(answers, known []dns.RR) []dns.RR {
	var out []dns.RR
	for _, rr := range answers {
		k := keyOf(rr)
		skip := false
		for _, kn := range known {
			if keyOf(kn) == k && kn.Header().Ttl >= rr.Header().Ttl/2 {
				skip = true
				break
			}
		}
		if !skip {
			out = append(out, rr)
		}
	}
	return out
}

// nodes is this node plus every complete instance of our cluster.
func (e *mdnsEngine) nodes() []Node {
	byName := map[string]*Node{}
	if !e.cfg.browseOnly {
		self := e.cfg.self
		self.Addrs = append([]netip.Addr(nil), self.Addrs...)
		byName[strings.ToLower(self.Name)] = &self
	}
	for _, c := range e.sets[rrsetKey{e.svc, dns.TypePTR}] {
		inst := dns.CanonicalName(c.rr.(*dns.PTR).Ptr)
		srvRR, ok1 := e.lookup(inst, dns.TypeSRV, nil)
		txtRR, ok2 := e.lookup(inst, dns.TypeTXT, nil)
		if !ok1 || !ok2 {
			continue
		}
		kv := txtMap(txtRR.(*dns.TXT).Txt)
		if kv["cluster"] != e.cfg.cluster {
			continue
		}
		target := dns.CanonicalName(srvRR.(*dns.SRV).Target)
		name := kv["name"]
		if checkLabel(name) != nil {
			name, _, _ = strings.Cut(target, ".")
			if checkLabel(name) != nil {
				continue
			}
		}
		// Roles compare as written in clusterdns ("master"); a peer
		// published by hand with role=Master is a master all the same.
		if n := e.addNode(byName, name, target); n != nil && n.Role == "" {
			n.Role = Role(strings.ToLower(kv["role"]))
		}
	}
	// Then the nodes published the way OpenShift's mdns-publisher does
	// (mdns_openshift.go): the name is the first label of the SRV target
	// (coredns-mdns answers "<that label>.<base domain>"), a master has an
	// Etcd instance, a worker only a Workstation one. A vipstack node
	// publishes both forms; the role in its TXT stands (a bootstrap node
	// has only the Workstation instance).
	fromTXT := map[string]bool{}
	for name, n := range byName {
		fromTXT[name] = n.Role != ""
	}
	for _, inst := range e.instances() {
		typ := e.typeOf(inst)
		if typ == e.svc {
			continue
		}
		srvRR, ok := e.lookup(inst, dns.TypeSRV, nil)
		if !ok {
			continue
		}
		target := dns.CanonicalName(srvRR.(*dns.SRV).Target)
		n := e.addNode(byName, firstLabel(target), target)
		if n == nil || fromTXT[strings.ToLower(n.Name)] {
			continue
		}
		if ocpTypeKind(typ) == ocpEtcd {
			n.Role = Master
		} else if n.Role == "" {
			n.Role = Worker
		}
	}
	out := make([]Node, 0, len(byName))
	for _, n := range byName {
		sortAddrs(n.Addrs)
		out = append(out, *n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// addNode adds the usable addresses of host target to the node called name
// in byName, creating it, and returns it; nil if name is no host name
// label, is this node's (we are the authority on ourselves) or has no
// usable address.
func (e *mdnsEngine) addNode(byName map[string]*Node, name, target string) *Node {
	if checkLabel(name) != nil {
		return nil
	}
	lname := strings.ToLower(name)
	if !e.cfg.browseOnly && lname == strings.ToLower(e.cfg.self.Name) {
		return nil
	}
	var addrs []netip.Addr
	for _, c := range concat(e.sets[rrsetKey{target, dns.TypeA}], e.sets[rrsetKey{target, dns.TypeAAAA}]) {
		var a netip.Addr
		switch rr := c.rr.(type) {
		case *dns.A:
			a, _ = netip.AddrFromSlice(rr.A.To4())
		case *dns.AAAA:
			a, _ = netip.AddrFromSlice(rr.AAAA.To16())
		default:
			continue
		}
		a = a.Unmap()
		if unusableAddr(a) == "" && !e.cfg.exclude[a] {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil
	}
	n := byName[lname]
	if n == nil {
		n = &Node{Name: name}
		byName[lname] = n
	}
	for _, a := range addrs {
		if !containsAddr(n.Addrs, a) {
			n.Addrs = append(n.Addrs, a)
		}
	}
	return n
}

// txtMap parses DNS-SD key=value strings (RFC 6763 section 6.4: keys are
// case-insensitive, the first occurrence wins).
func txtMap(txt []string) map[string]string {
	m := map[string]string{}
	for _, s := range txt {
		k, v, _ := strings.Cut(s, "=")
		k = strings.ToLower(k)
		if _, ok := m[k]; !ok && k != "" {
			m[k] = v
		}
	}
	return m
}

// concat lists the entries of two RRsets.
func concat(a, b map[cacheKey]*cacheEntry) []*cacheEntry {
	out := make([]*cacheEntry, 0, len(a)+len(b))
	for _, c := range a {
		out = append(out, c)
	}
	for _, c := range b {
		out = append(out, c)
	}
	return out
}

package clusterdns

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/discovery"
)

// etcdPort is the port of the _etcd-server-ssl._tcp SRV records (etcd's
// peer port).
const etcdPort = 2380

// Relative names with a fixed meaning in the zone.
const (
	labelAPI    = "api"
	labelAPIInt = "api-int"
	labelApps   = "apps"
	etcdPrefix  = "etcd-"
	srvName     = "_etcd-server-ssl._tcp"
	srvParent   = "_tcp"
)

// reserved reports whether a node name would collide with a name the plugin
// answers from the VIPs or the masters.
func reserved(name string) bool {
	switch name {
	case labelAPI, labelAPIInt, labelApps:
		return true
	}
	if n, ok := strings.CutPrefix(name, etcdPrefix); ok {
		if _, err := strconv.ParseUint(n, 10, 32); err == nil {
			return true
		}
	}
	return false
}

// entry is everything a name has. An entry with no records is a name that
// exists without data (the zone apex, apps, _tcp, a node without addresses).
type entry struct {
	v4, v6 []netip.Addr
	srv    []target
	apex   bool // the zone apex: answers SOA
	bare   bool // a node's single-label name, outside the zone
}

// target is one SRV target with its addresses for the additional section.
type target struct {
	name   string
	v4, v6 []netip.Addr
}

// index is an immutable answer table for one registry version.
type index struct {
	version uint64
	zone    string
	ttl     uint32
	names   map[string]*entry // relative to zone, lower case; "" is the apex
	bare    map[string]*entry // single-label node names, with the trailing dot
	ingress *entry            // every name strictly under apps.<zone>; nil without ingress VIPs
	// ptr maps the reverse name (lower case, as dns.ReverseAddr writes
	// it) of every node address to the names it answers PTR with: the
	// node's short name and NODE.ZONE, as a hosts line "ADDR NODE
	// NODE.ZONE" does. Empty with NodesOnly.
	ptr map[string][]string
}

// skippedNode is a registry node the index could not name.
type skippedNode struct{ name, why string }

// buildIndex computes every answer for cfg and the registry's nodes.
func buildIndex(cfg *Config, version uint64, nodes []discovery.Node) (*index, []skippedNode) {
	idx := &index{
		version: version,
		zone:    cfg.Zone,
		ttl:     cfg.TTL,
		names:   map[string]*entry{"": {apex: true}},
		bare:    map[string]*entry{},
		ptr:     map[string][]string{},
	}
	if cfg.NodesOnly {
		delete(idx.names, "")
	}
	if len(cfg.API) > 0 && !cfg.NodesOnly {
		api := addrEntry(cfg.API)
		idx.names[labelAPI] = api
		idx.names[labelAPIInt] = api
	}
	if len(cfg.Ingress) > 0 && !cfg.NodesOnly {
		idx.ingress = addrEntry(cfg.Ingress)
		idx.names[labelApps] = &entry{}
	}

	type named struct {
		name string
		node discovery.Node
	}
	var skipped []skippedNode
	var ok []named
	for _, n := range nodes {
		name, err := nodeLabel(n.Name, cfg.Zone, !cfg.NodesOnly)
		if err != nil {
			skipped = append(skipped, skippedNode{name: n.Name, why: err.Error()})
			continue
		}
		ok = append(ok, named{name, n})
	}
	sort.SliceStable(ok, func(i, j int) bool { return ok[i].name < ok[j].name })

	var masters []target
	var masterNames []string
	for _, n := range ok {
		if _, dup := idx.names[n.name]; dup {
			skipped = append(skipped, skippedNode{name: n.node.Name, why: "another node has the same name"})
			continue
		}
		e := addrEntry(n.node.Addrs)
		idx.names[n.name] = e
		if cfg.NodesOnly {
			if n.node.Role == discovery.Master && !n.node.NotReady {
				masters = append(masters, target{name: n.name + "." + cfg.Zone, v4: e.v4, v6: e.v6})
			}
			continue
		}
		idx.bare[n.name+"."] = &entry{v4: e.v4, v6: e.v6, bare: true}
		for _, a := range slices.Concat(e.v4, e.v6) {
			rev, err := dns.ReverseAddr(a.String())
			if err != nil {
				continue
			}
			rev = strings.ToLower(rev)
			// An address two nodes claim names both, in name order.
			idx.ptr[rev] = append(idx.ptr[rev], n.name+".", n.name+"."+cfg.Zone)
		}
		// A master a source knows is not running keeps its name, not its
		// place among etcd's members (seed 003: "the list of control
		// plane nodes currently running").
		if n.node.Role == discovery.Master && !n.node.NotReady {
			masters = append(masters, target{v4: e.v4, v6: e.v6})
			masterNames = append(masterNames, n.name)
		}
	}
	if cfg.NodesOnly {
		// coredns-mdns's SRV targets are the hosts themselves, and it
		// has no etcd-N names nor an entry for _tcp.
		if len(masters) > 0 && len(masters) >= cfg.MinSRV {
			idx.names[srvName] = &entry{srv: masters}
		}
		return idx, skipped
	}
	for i, num := range etcdNumbers(masterNames) {
		rel := etcdPrefix + strconv.Itoa(num)
		masters[i].name = rel + "." + cfg.Zone
		idx.names[rel] = &entry{v4: masters[i].v4, v6: masters[i].v6}
	}
	if len(masters) > 0 {
		idx.names[srvName] = &entry{srv: masters}
		idx.names[srvParent] = &entry{}
	}
	return idx, skipped
}

// maxEtcdNumber bounds the number a master's name can give its etcd-N name.
const maxEtcdNumber = 9999

// etcdNumbers gives each master (names in name order) the N of its etcd-N
// name. A name that ends in "-<digits>" (OpenShift's <cluster>-master-N)
// keeps that number, so a master's etcd-N does not move when another master
// leaves: OpenShift 4.1 to 4.3 put etcd-N.<domain> in each member's serving
// certificate, and a shift would send etcd-0 to the member whose certificate
// says etcd-1. Before, the masters were numbered in name order, and master-0
// leaving moved every other master's name. A name without such a number,
// or whose number an earlier name took, gets the lowest number left, in
// name order.
func etcdNumbers(names []string) []int {
	nums := make([]int, len(names))
	taken := map[int]bool{}
	for i, name := range names {
		nums[i] = -1
		dash := strings.LastIndexByte(name, '-')
		if dash < 0 || dash == len(name)-1 {
			continue
		}
		digits := name[dash+1:]
		n, err := strconv.Atoi(digits)
		if err != nil || n < 0 || n > maxEtcdNumber || (len(digits) > 1 && digits[0] == '0') || taken[n] {
			continue
		}
		nums[i], taken[n] = n, true
	}
	next := 0
	for i := range nums {
		if nums[i] >= 0 {
			continue
		}
		for taken[next] {
			next++
		}
		nums[i], taken[next] = next, true
	}
	return nums
}

// nodeLabel turns a registry node name into the single label it gets in the
// zone. A name already qualified with the zone is accepted. With
// checkReserved, the names the plugin answers from the VIPs and masters are
// refused. NodesOnly answers none of them, and OpenShift 4.2's OpenStack
// config had mdns-publisher publish the masters' Etcd instances on hosts
// named etcd-N, which coredns-mdns answers as node names (the SRV targets).
func nodeLabel(name, zone string, checkReserved bool) (string, error) {
	l := strings.ToLower(strings.TrimSuffix(name, "."))
	l = strings.TrimSuffix(l, "."+strings.TrimSuffix(zone, "."))
	if !isHostLabel(l) {
		return "", fmt.Errorf("not a short host name (one label: letters, digits and inner hyphens)")
	}
	if checkReserved && reserved(l) {
		return "", fmt.Errorf("reserved (api, api-int, apps and etcd-N are answered from the VIPs and masters)")
	}
	return l, nil
}

func addrEntry(addrs []netip.Addr) *entry {
	e := &entry{}
	for _, a := range addrs {
		a = a.Unmap()
		switch {
		case a.Is4():
			e.v4 = append(e.v4, a)
		case a.Is6():
			e.v6 = append(e.v6, a)
		}
	}
	return e
}

// lookup finds qname (lower case, fully qualified). inZone reports whether
// the name is the plugin's to answer: in the zone, or a node's bare name.
// A nil entry with inZone set is a name the zone does not have.
//
// Names are compared label by label, not byte by byte: a label may hold an
// escaped dot, so "x.api\.managed.example.com." (labels x, "api.managed",
// example, com) is outside the zone although its text ends with it, and
// "a\.apps.ZONE" is one label directly under the zone, not a name under
// apps.
func (x *index) lookup(qname string) (e *entry, inZone bool) {
	if qname == x.zone {
		return x.names[""], true
	}
	starts := dns.Split(qname) // where each label starts, escapes honoured
	n, z := len(starts), dns.CountLabel(x.zone)
	if n > z && qname[starts[n-z]:] == x.zone {
		rel := qname[:starts[n-z]-1]
		if e := x.names[rel]; e != nil {
			return e, true
		}
		if x.ingress != nil && n-z >= 2 && qname[starts[n-z-1]:starts[n-z]-1] == labelApps {
			return x.ingress, true
		}
		return nil, true
	}
	if e := x.bare[qname]; e != nil && n == 1 {
		return e, true
	}
	return nil, false
}

// soa is the zone's SOA record, for the apex and negative answers. Its
// serial is one more than the registry version (so a zone served from its
// node lines alone has serial 1); the negative TTL is the answer TTL.
func (x *index) soa() dns.RR {
	return &dns.SOA{
		Hdr:     dns.RR_Header{Name: x.zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: x.ttl},
		Ns:      "ns." + x.zone,
		Mbox:    "hostmaster." + x.zone,
		Serial:  uint32(x.version + 1),
		Refresh: 7200,
		Retry:   1800,
		Expire:  86400,
		Minttl:  x.ttl,
	}
}

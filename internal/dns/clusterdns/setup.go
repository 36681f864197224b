package clusterdns

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/discovery"
)

// Name is the plugin's directive name.
const Name = "clusterdns"

// DefaultTTL is the TTL of every answer unless the block sets ttl.
const DefaultTTL = 60

// RegistryFunc returns the live registry that the clusterdns block for zone
// (a lower-case FQDN such as "managed.example.com.") reads. Returning nil
// gives the block an empty private registry. The block only reads the
// registry (its node lines stay in the block), so blocks may share one.
type RegistryFunc func(zone string) *discovery.Registry

// NewSetup returns the setup function for the clusterdns directive. The
// function captures live: every clusterdns block it sets up (at start and
// after every reload) asks live for its zone's registry. live may be nil.
//
// CoreDNS keeps its plugin table per process, so the embedder registers the
// result once, e.g. plugin.Register(Name, NewSetup(live)).
func NewSetup(live RegistryFunc) caddy.SetupFunc {
	return func(c *caddy.Controller) error {
		cfg, err := parse(c)
		if err != nil {
			return plugin.Error(Name, err)
		}
		var reg *discovery.Registry
		if live != nil {
			reg = live(cfg.Zone)
		}
		h := New(cfg, reg)
		dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler {
			h.Next = next
			return h
		})
		return nil
	}
}

// parse reads one clusterdns block. Errors come from c.Errf and friends, so
// they name the Corefile and line.
func parse(c *caddy.Controller) (Config, error) {
	cfg := Config{TTL: DefaultTTL}
	blocks := 0
	for c.Next() {
		if blocks > 0 {
			return Config{}, c.Errf("a second %s block in one server block; merge it into the first (one zone per block, one block per server block)", Name)
		}
		blocks++
		args := c.RemainingArgs()
		if len(args) != 1 {
			return Config{}, c.Errf("want exactly one zone after %s (e.g. %q), got %d arguments %q", Name, "clusterdns managed.example.com {", len(args), args)
		}
		zone, err := parseZone(args[0])
		if err != nil {
			return Config{}, c.Errf("zone: %v", err)
		}
		if err := inServerBlock(zone, c.ServerBlockKeys, Name); err != nil {
			return Config{}, c.Errf("zone: %v", err)
		}
		cfg.Zone = zone
		seen := map[string]bool{}
		for c.NextBlock() {
			switch prop := c.Val(); prop {
			case "api", "ingress":
				addrs, err := parseAddrs(c, prop, c.RemainingArgs())
				if err != nil {
					return Config{}, err
				}
				if prop == "api" {
					cfg.API = append(cfg.API, addrs...)
				} else {
					cfg.Ingress = append(cfg.Ingress, addrs...)
				}
			case "node":
				n, err := parseNode(c, c.RemainingArgs())
				if err != nil {
					return Config{}, err
				}
				if seen[n.Name] {
					return Config{}, c.Errf("node %q: listed twice; give each node one line with all its addresses", n.Name)
				}
				seen[n.Name] = true
				cfg.Nodes = append(cfg.Nodes, n)
			case "ttl":
				args := c.RemainingArgs()
				if len(args) != 1 {
					return Config{}, c.Errf("ttl: want one number of seconds, got %q", args)
				}
				ttl, err := strconv.ParseUint(args[0], 10, 32)
				if err != nil || ttl > maxTTL {
					return Config{}, c.Errf("ttl: %q is not a number of seconds from 0 to %d", args[0], maxTTL)
				}
				cfg.TTL = uint32(ttl)
			case "fallthrough":
				args := c.RemainingArgs()
				if err := checkFallZones(zone, args); err != nil {
					return Config{}, c.Errf("fallthrough: %v", err)
				}
				cfg.Fall.SetZonesFromArgs(args)
			default:
				return Config{}, c.Errf("unknown property %q; want api, ingress, node, ttl or fallthrough", prop)
			}
		}
	}
	if blocks == 0 {
		return Config{}, c.ArgErr()
	}
	return cfg, nil
}

// ParseZone checks and normalises a zone name as the clusterdns directive
// does, for other directives that name a cluster domain (mdns).
func ParseZone(s string) (string, error) { return parseZone(s) }

// InServerBlock checks that the server block keys cover zone, so that
// queries for it reach the plugin at all; directive names the plugin in
// the error.
func InServerBlock(zone string, keys []string, directive string) error {
	return inServerBlock(zone, keys, directive)
}

// checkFallZones refuses fallthrough zones that would change nothing, which
// CoreDNS's fall package accepts silently: one that does not parse as a
// zone (dropped), and one that neither holds nor lies inside zone (no name
// the block answers is in it, so its names still get NXDOMAIN).
func checkFallZones(zone string, args []string) error {
	for _, a := range args {
		zs := plugin.Host(a).NormalizeExact()
		if len(zs) == 0 {
			return fmt.Errorf("%q is not a zone; want zones inside %s (e.g. apps.%s), or no argument for all of it", a, zone, zone)
		}
		for _, z := range zs {
			if !dns.IsSubDomain(z, zone) && !dns.IsSubDomain(zone, z) {
				return fmt.Errorf("%q is outside the block's zone %s, so it would pass nothing on; want zones inside it (e.g. apps.%s), or no argument for all of it", a, zone, zone)
			}
		}
	}
	return nil
}

// maxTTL bounds the ttl property (one day).
const maxTTL = 86400

// parseZone checks and normalises a zone name: host-name labels (letters,
// digits, hyphens), at least one label, not the root.
func parseZone(s string) (string, error) {
	z := strings.ToLower(dns.Fqdn(s))
	if z == "." {
		return "", fmt.Errorf("%q is the root; want the cluster's domain, e.g. managed.example.com", s)
	}
	for _, l := range strings.Split(strings.TrimSuffix(z, "."), ".") {
		if !isHostLabel(l) {
			return "", fmt.Errorf("%q: label %q is not a host name label (letters, digits and inner hyphens, 1 to 63 characters)", s, l)
		}
	}
	if len(z) > 254 {
		return "", fmt.Errorf("%q is longer than 253 characters", s)
	}
	return z, nil
}

// inServerBlock checks that the server block's zones cover zone, so that
// queries for it reach the plugin at all.
func inServerBlock(zone string, keys []string, directive string) error {
	zones := plugin.OriginsFromArgsOrServerBlock(nil, keys)
	if len(zones) == 0 {
		return nil // a test controller without server block keys
	}
	for _, z := range zones {
		if dns.IsSubDomain(z, zone) {
			return nil
		}
	}
	return fmt.Errorf("%q is outside this server block's zones %q, so no query for it would reach %s", zone, zones, directive)
}

func isHostLabel(l string) bool {
	if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		b := l[i]
		if !(b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '-') {
			return false
		}
	}
	return true
}

func parseAddrs(c *caddy.Controller, prop string, args []string) ([]netip.Addr, error) {
	if len(args) == 0 {
		return nil, c.Errf("%s: want at least one IPv4 or IPv6 address, e.g. %s 198.18.0.5 fd00:bb::5", prop, prop)
	}
	out := make([]netip.Addr, 0, len(args))
	for _, a := range args {
		ip, err := parseAddr(a)
		if err != nil {
			return nil, c.Errf("%s: %v", prop, err)
		}
		out = append(out, ip)
	}
	return out, nil
}

func parseAddr(s string) (netip.Addr, error) {
	ip, err := netip.ParseAddr(s)
	if err != nil || ip.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("%q is not an IP address; want an IPv4 or IPv6 literal without zone, e.g. 198.18.0.5 or fd00:bb::5", s)
	}
	if ip.IsUnspecified() || ip.IsMulticast() {
		return netip.Addr{}, fmt.Errorf("%q is not a unicast address", s)
	}
	return ip.Unmap(), nil
}

func parseNode(c *caddy.Controller, args []string) (discovery.Node, error) {
	if len(args) < 3 {
		return discovery.Node{}, c.Errf("node: want NAME ROLE ADDRESS..., e.g. node master-0 master 198.18.0.11 fd00:bb::11, got %q", args)
	}
	name := strings.ToLower(args[0])
	if !isHostLabel(name) {
		return discovery.Node{}, c.Errf("node: name %q is not a short host name (one label: letters, digits and inner hyphens)", args[0])
	}
	if reserved(name) {
		return discovery.Node{}, c.Errf("node: name %q is reserved by %s (api, api-int, apps and etcd-N are answered from the VIPs and masters)", args[0], Name)
	}
	role := discovery.Role(args[1])
	switch role {
	case discovery.Master, discovery.Worker, discovery.Bootstrap:
	default:
		return discovery.Node{}, c.Errf("node %s: role %q; want master, worker or bootstrap", name, args[1])
	}
	n := discovery.Node{Name: name, Role: role}
	for _, a := range args[2:] {
		ip, err := parseAddr(a)
		if err != nil {
			return discovery.Node{}, c.Errf("node %s: %v", name, err)
		}
		n.Addrs = append(n.Addrs, ip)
	}
	return n, nil
}

package dns

import (
	// The plugins vipstack's CoreDNS is built with; each registers its
	// directive with Caddy in init (clusterdns and mdns are registered by
	// NewServer, with state that outlives a reload). The list must match
	// Directives.
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/bufsize"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/template"

	"github.com/vipstack/vipstack/internal/dns/clusterdns"
	"github.com/vipstack/vipstack/internal/dns/mdnsplugin"
)

// Directives returns the plugins this build knows, in the order a query
// passes through them (the order in the Corefile does not matter). It is
// CoreDNS's own order (core/dnsserver/zdirectives.go) restricted to these
// plugins, with clusterdns inserted before cache:
//
//   - before cache, so that the answers it computes from live state are never
//     held in the local cache: a node joining or leaving changes the very next
//     answer even with the seeds' "cache 30". Its answers come from a
//     precomputed index, so a cache in front of it would not make them
//     cheaper. Queries it passes on (fallthrough, other zones) still go
//     through cache;
//   - before template and hosts, so that adding a clusterdns block to a
//     Corefile that still has the old template and hosts lines for the zone
//     serves the live state, with those lines as the fallback for names
//     clusterdns passes on (with fallthrough);
//   - before forward, so that the cluster zone never leaks upstream unless
//     clusterdns falls through.
//
// mdns (mdnsplugin, OpenShift's "mdns DOMAIN 0 CLUSTER ADDRESS" line) sits
// where OpenShift's build puts coredns-mdns (openshift/coredns plugin.cfg):
// after cache and before template, hosts and forward. So OpenShift's
// Corefile behaves as on OpenShift: "cache 30" holds mdns's answers (a node
// that leaves is answered until the cached record expires, at most 30 s),
// and the names mdns passes on (api, api-int, *.apps, anything else) meet
// the templates, then forward.
//
// The result is a fresh slice.
func Directives() []string {
	return []string{
		"reload",
		"bufsize",
		"bind",
		"ready",
		"health",
		"prometheus",
		"errors",
		"log",
		clusterdns.Name,
		"cache",
		mdnsplugin.Name,
		"template",
		"hosts",
		"forward",
	}
}

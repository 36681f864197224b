package dns

import (
	// The stock plugins (stockplugins registers each directive with Caddy
	// in init); clusterdns and mdns are registered by NewServer, with state
	// that outlives a reload. The set must match Directives.
	_ "github.com/vipstack/vipstack/internal/dns/stockplugins"

	"github.com/vipstack/vipstack/internal/dns/clusterdns"
	"github.com/vipstack/vipstack/internal/dns/mdnsplugin"
)

// Directives returns the plugins this build knows, in the order a query
// passes through them (the order in the Corefile does not matter). It is
// stock CoreDNS's order (its plugin.cfg, as core/dnsserver/zdirectives.go
// of the CoreDNS version in go.mod has it) without the plugins in Refused,
// with clusterdns inserted just before cache and mdns just after it.
//
// clusterdns sits
//
//   - before cache, so that the answers it computes from live state are never
//     held in the local cache: a node joining or leaving changes the very next
//     answer even with the seeds' "cache 30". Its answers come from a
//     precomputed index, so a cache in front of it would not make them
//     cheaper. Queries it passes on (fallthrough, other zones) still go
//     through cache;
//   - after acl, rewrite, loadbalance and the other plugins that stock
//     CoreDNS runs before cache, so they act on its queries and answers as
//     on any other plugin's behind cache (acl refuses, rewrite renames,
//     loadbalance shuffles);
//   - before template, hosts, file and kubernetes, so that adding a
//     clusterdns block to a Corefile that still has the old template and
//     hosts lines for the zone serves the live state, with those lines as
//     the fallback for names clusterdns passes on (with fallthrough);
//   - before forward, so that the cluster zone never leaks upstream unless
//     clusterdns falls through.
//
// mdns (mdnsplugin, OpenShift's "mdns DOMAIN 0 CLUSTER ADDRESS" line) sits
// where OpenShift's build puts coredns-mdns: after cache and before
// template, hosts and forward. So OpenShift's Corefile behaves as on
// OpenShift: "cache 30" holds mdns's answers (a node that leaves is
// answered until the cached record expires, at most 30 s), and the names
// mdns passes on (api, api-int, *.apps, anything else) meet the templates,
// then forward.
//
// The result is a fresh slice.
func Directives() []string {
	return []string{
		"root",
		"metadata",
		"geoip",
		"cancel",
		"proxyproto",
		"quic",
		"grpc_server",
		"https",
		"https3",
		"timeouts",
		"multisocket",
		"reload",
		"nsid",
		"bufsize",
		"bind",
		"debug",
		"ready",
		"health",
		"pprof",
		"shed",
		"prometheus",
		"errors",
		"log",
		"dnstap",
		"local",
		"dns64",
		"siit",
		"any",
		"chaos",
		"loadbalance",
		"tsig",
		"rewrite",
		"autopath",
		"acl",
		clusterdns.Name,
		"cache",
		mdnsplugin.Name,
		"header",
		"tls",
		"minimal",
		"template",
		"transfer",
		"dynupdate",
		"hosts",
		"k8s_external",
		"kubernetes",
		"file",
		"auto",
		"secondary",
		"etcd",
		"loop",
		"forward",
		"grpc",
		"erratic",
		"whoami",
		"on",
		"sign",
		"view",
		"nomad",
	}
}

// Refused returns the stock CoreDNS plugins this build leaves out, each
// with the reason: what linking it would drag into the binary. A Corefile
// that names one is refused with that reason (Validate); nothing is
// silently ignored. The result is a fresh map.
func Refused() map[string]string {
	return map[string]string{
		"route53":  "it serves zones from AWS Route 53 and needs the AWS SDK (github.com/aws/aws-sdk-go-v2)",
		"azure":    "it serves zones from Azure DNS and needs the Azure SDK (github.com/Azure/azure-sdk-for-go, go-autorest)",
		"clouddns": "it serves zones from Google Cloud DNS and needs the Google Cloud API clients (google.golang.org/api, cloud.google.com/go/auth)",
		"dnssec":   "it can read keys from AWS Secrets Manager and so needs the AWS SDK (github.com/aws/aws-sdk-go-v2); sign (DNSSEC-signed zone files served by file or auto) is built in",
		"trace":    "it needs the Datadog tracer and agent libraries (github.com/DataDog/dd-trace-go, datadog-agent) and Zipkin; use prometheus and log for metrics and query logs",
	}
}

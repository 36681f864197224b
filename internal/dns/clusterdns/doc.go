// Package clusterdns is a CoreDNS plugin that answers for a cluster's DNS zone
// from live cluster state: api and api-int (API VIPs), everything under apps
// (Ingress VIPs), node names short and fully qualified (node addresses),
// etcd-N (control-plane node N, from its name's -N where it has one) and the
// _etcd-server-ssl._tcp SRV record (RFC 2782) listing every control-plane
// node on port 2380.
//
// Node state comes from a discovery.Registry, read on every query, so a node
// that joins or leaves changes the next answer without a reload. Names that
// exist without records of the asked type get NODATA (NOERROR with the zone's
// SOA in the authority section, RFC 2308 section 2.2); unknown names in the
// zone get NXDOMAIN (RFC 2308 section 2.1) unless fallthrough passes them on.
//
// The package has the shape of an in-tree CoreDNS plugin (setup.go, the
// handler in clusterdns.go, README.md) with one difference: it does not
// register itself in init. The embedder (package internal/dns) registers the
// setup function NewSetup returns, which captures how to find the live
// registry for a zone. See README.md for the Corefile syntax.
//
// Config.NodesOnly narrows the same index and answers to what OpenShift's
// coredns-mdns answers (node names and the etcd SRV with the nodes as
// targets, everything else passed on): the mdns directive
// (internal/dns/mdnsplugin) is this handler fed by a browse-only mDNS
// browser.
package clusterdns

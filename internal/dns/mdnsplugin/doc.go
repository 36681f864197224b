// Package mdnsplugin is vipstack's mdns directive for CoreDNS: the line
// OpenShift's on-premise Corefile has ("mdns <base domain> 0 <cluster>
// <node address>"), answered from mDNS (RFC 6762, DNS-SD RFC 6763) as
// OpenShift's own CoreDNS plugin, github.com/openshift/coredns-mdns, answers
// it, so that an OpenShift node can run `vipstack dns` with the Corefile it
// has. See README.md for the directive.
//
// # What coredns-mdns does (read, not copied)
//
// Read in the stored copies of github.com/openshift/coredns-mdns: setup.go
// (commit 02c3e444) and mdns.go (commit 08a6e1a0), with its README for
// the bind address:
//
//   - setup reads "mdns DOMAIN [MIN_SRV [FILTER [BIND_ADDRESS]]]": MIN_SRV
//     goes through strconv.Atoi ("Invalid minSRV: ..." otherwise) and
//     defaults to 3, FILTER defaults to "" (which matches everything), a
//     fifth argument is an argument error. A missing DOMAIN is silently "".
//     The browse loop starts in OnStartup and never stops: a reload starts
//     one more.
//   - it browses _workstation._tcp and _etcd-server-ssl._tcp in .local,
//     keeps the instances whose name contains FILTER (a substring), and
//     maps each SRV target host "h.local." to "h.DOMAIN.".
//   - ServeDNS passes to the next plugin every name not ending in DOMAIN and
//     every type but A, AAAA, SRV and CNAME. For a known host it answers the
//     first IPv4 and the first IPv6 address with TTL 60.
//     "_etcd-server-ssl._tcp.DOMAIN" gets one SRV per Etcd instance,
//     priority 0, weight 10, the instance's port, but only once at least
//     MIN_SRV instances are known (so that etcd never bootstraps from a
//     partial member list); OpenShift's Corefile sets 0, so the SRV answer
//     comes with the first master. Every other name goes to the next
//     plugin.
//   - In OpenShift's build (openshift/coredns plugin.cfg) mdns sits after
//     cache and before template, hosts and forward: its answers are cached
//     by "cache 30", and what it passes on meets the templates (api,
//     api-int, *.apps) and then forward.
//
// # What vipstack does
//
// The answers are clusterdns's (clusterdns.Config.NodesOnly): one index of
// node names and the etcd SRV, the same records clusterdns serves, read from
// a discovery.Registry that a browse-only discovery.MDNS (Self zero, with
// OpenShift) feeds. Differences from coredns-mdns, each on purpose:
//
//   - FILTER is the cluster name, matched by vipstack's rule for
//     mdns-publisher's labels (discovery/mdns_openshift.go): the instance
//     label must be "FILTER Workstation" or "FILTER Etcd", alone or followed
//     by "-" and the host, or mdns-publisher's cut form of such a label
//     over 63 bytes (a long host name). A substring would take cluster "ostest2"'s nodes
//     for "ostest"'s and every avahi host containing the word. FILTER must
//     be a host name label; without FILTER every cluster's instances count.
//   - Every address of a node is answered, by type: an A query gets the A
//     records, AAAA the AAAA records; a node without an address of the asked
//     type gets an empty NOERROR answer (NODATA), never NXDOMAIN.
//   - SRV targets are the master's "NODE.DOMAIN." with port 2380 (what
//     mdns-publisher publishes and clusterdns answers), TTL 60, and the
//     targets' addresses ride in the additional section. Every host name
//     is a node name, etcd-N included (clusterdns reserves etcd-N for its
//     numbering, which the directive has not): OpenShift 4.2's OpenStack
//     config published the masters' Etcd instances on etcd-N.local.
//   - Nodes go when their records do: a goodbye removes a node at once, a
//     silent node when its TTL runs out; there is no periodic re-browse
//     that forgets everything between two rounds.
//   - Arguments are checked: DOMAIN is required and must be a host name
//     inside the server block's zones, MIN_SRV a number from 0, FILTER a
//     label, BIND_ADDRESS an IP address; each error names the Corefile line.
//   - BIND_ADDRESS picks the interface holding that address when the
//     server starts; if no interface holds it, the start (or reload) fails
//     with an error naming the address. Without it, every up,
//     multicast-capable, non-loopback interface is used.
//
// # Lifecycle
//
// Each distinct mdns line (DOMAIN, MIN_SRV, FILTER, BIND_ADDRESS) has one
// browser in the process's Browsers, which the embedder creates once and
// hands to NewSetup (package internal/dns does, in NewServer). A server
// block using the line counts as one user from its instance's OnStartup to
// its OnShutdown; the browser's sockets open for the first user and close
// after the last. CoreDNS runs a reload's new OnStartup before the old
// instance's OnShutdown, so a reload that keeps the line keeps the browser
// running, with the nodes it knows: the names stay answered. With a
// browser per instance (coredns-mdns, too, starts one per reload), a
// reload left the node names and the etcd SRV to the next plugins until
// mDNS answered the new browser; upstream answered them and "cache 30"
// kept that answer. A reload that
// changes the line runs the new browser alongside the old one for a moment
// (the mDNS sockets share port 5353 with SO_REUSEPORT); neither sockets nor
// goroutines leak. -check sets the plugin up without starting it: no
// socket is opened.
package mdnsplugin

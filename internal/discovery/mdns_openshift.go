package discovery

import (
	"strings"
)

// OpenShift's on-premise clusters (baremetal, OpenStack, vSphere, ...)
// discover their nodes with two components that vipstack replaces:
//
//   - mdns-publisher (github.com/openshift/mdns-publisher, run as a static
//     pod with the config that machine-config-operator renders,
//     templates/*/00-*/baremetal/files/baremetal-mdns-config.yaml) publishes
//     on every node the service "<cluster> Workstation" of type
//     _workstation._tcp, port 42424, host "<short host name>.local." with
//     the node address (bind_address, one A or one AAAA), and on masters also
//     "<cluster> Etcd" of type _etcd-server-ssl._tcp, port 2380, same host.
//     With collision_avoidance = "hostname" (what the config sets) each
//     instance label gets "-<short host name>" appended:
//     "ostest Workstation-master-0". The TXT record is empty, the TTL of
//     PTR, SRV and TXT is 3200 s and that of the address 120 s
//     (github.com/celebdor/zeroconf, server.go). It answers only PTR queries
//     for its type (with SRV, TXT and address as additional records) and
//     queries for its instance name spelled exactly as published; never a
//     query for its host name.
//
//   - CoreDNS with the mdns plugin (github.com/openshift/coredns-mdns,
//     Corefile line "mdns <base domain> 0 <cluster> <node address>") browses
//     _workstation._tcp and _etcd-server-ssl._tcp every ~7 s, keeps the
//     instances whose label contains the cluster name, and answers
//     "<first label of the SRV target>.<base domain>" with the first IPv4
//     and first IPv6 address of that host, and
//     "_etcd-server-ssl._tcp.<base domain>" with one SRV record per Etcd
//     instance (target "<host>.<base domain>", the instance's port).
//
// With MDNS.OpenShift vipstack publishes both instances the same way (the
// Etcd one on masters only), so an OpenShift node's CoreDNS answers for a
// vipstack node, and browses both types, so vipstack answers for a node that
// still runs mdns-publisher: its name is the first label of the SRV target,
// its addresses those of that host, and it is a master when an Etcd instance
// of the cluster points at it (clusterdns numbers the masters etcd-N), a
// worker otherwise. Only instances whose label is "<cluster> Workstation"
// or "<cluster> Etcd", alone or followed by "-" and anything, or such a label
// cut by mdns-publisher to 63 bytes (ocpCutOf), count: every
// avahi host on a link publishes _workstation._tcp ("host [mac]"), and
// coredns-mdns's substring match would also take cluster "ostest2"'s nodes
// for cluster "ostest"'s.

const (
	// MDNSWorkstationType is the service type mdns-publisher publishes on
	// every OpenShift node.
	MDNSWorkstationType = "_workstation._tcp"
	// MDNSEtcdType is the service type mdns-publisher publishes on masters.
	MDNSEtcdType = "_etcd-server-ssl._tcp"

	ocpWorkstation = "Workstation"
	ocpEtcd        = "Etcd"

	// The ports in mdns-publisher's config: 42424 is no service (the
	// record is the node's presence), 2380 is etcd's peer port.
	ocpWorkstationPort = 42424
	ocpEtcdPort        = 2380
)

// ocpInstanceLabel is the instance label mdns-publisher publishes for a node
// with collision_avoidance = "hostname": "<cluster> <kind>-<node>".
func ocpInstanceLabel(cluster, kind, node string) string {
	return cluster + " " + kind + "-" + node
}

// ocpKindOf returns the kind ("Workstation" or "Etcd") of an instance label
// published by mdns-publisher for cluster, or "" if the label is not one.
// Labels compare case-insensitively (they are DNS names, and the cache keeps
// them lower-case).
//
// An empty cluster (a browse-only MDNS for every cluster) takes any
// non-empty first word without a space as the cluster name.
func ocpKindOf(label, cluster string) string {
	if cluster == "" {
		word, _, ok := strings.Cut(label, " ")
		if !ok || word == "" {
			return ""
		}
		cluster = word
	}
	for _, kind := range []string{ocpWorkstation, ocpEtcd} {
		base := cluster + " " + kind
		if len(label) < len(base) || !strings.EqualFold(label[:len(base)], base) {
			continue
		}
		if rest := label[len(base):]; rest == "" || rest[0] == '-' {
			return kind
		}
	}
	return ""
}

// mdns-publisher (since 2022, the version OpenShift ships) cuts an instance
// label longer than 63 bytes to its first ocpCutHead bytes, the first
// ocpCutHash hex digits of the SHA-256 of the whole label and its last
// ocpCutTail bytes (publisher.go, truncateLongServiceName): with
// collision_avoidance = "hostname", "ostest Workstation-<55-byte host name>"
// goes on the wire as "ostest Workstat" + 32 hex digits + the last 16 bytes
// of the host name (measured with the real mdns-publisher).
const (
	ocpCutHead = 15
	ocpCutHash = 32
	ocpCutTail = 16
	ocpCutLen  = ocpCutHead + ocpCutHash + ocpCutTail // 63, a label's most
)

// ocpCutOf reports whether label is mdns-publisher's cut form of a label
// "<cluster> <kind>-<host>" too long for a DNS label: 63 bytes, 32 hex
// digits after the first 15 bytes, and those 15 bytes the start of
// "<cluster> <kind>-". The kind is not always in them ("ostest Workstat",
// or none of it for a cluster name of 15 bytes or more): the caller checks
// the service type for it. The host part is not checked: the SRV target
// names the node. An empty cluster takes any first word, or any 15 bytes
// without a space (a cluster name too long to end in them).
//
// Two clusters whose names share their first 15 bytes cannot be told apart
// in this form; a cluster name of 15 bytes or more with a node name long
// enough to be cut is the only case where that matters.
func ocpCutOf(label, cluster, kind string) bool {
	if len(label) != ocpCutLen {
		return false
	}
	for _, c := range []byte(label[ocpCutHead : ocpCutHead+ocpCutHash]) {
		if !isDigit(c) && (c < 'a' || c > 'f') {
			return false
		}
	}
	head := label[:ocpCutHead]
	if cluster == "" {
		word, _, ok := strings.Cut(head, " ")
		if !ok {
			return true // a cluster name of 15 bytes or more
		}
		if word == "" {
			return false // the label starts with a space
		}
		cluster = word
	}
	base := cluster + " " + kind + "-"
	n := min(len(base), ocpCutHead)
	return strings.EqualFold(head[:n], base[:n])
}

// ocpTypeKind is the kind whose instances service type typ (a canonical
// "_workstation._tcp.local." or "_etcd-server-ssl._tcp.local.") holds.
func ocpTypeKind(typ string) string {
	switch typ {
	case dnsTypeName(MDNSWorkstationType):
		return ocpWorkstation
	case dnsTypeName(MDNSEtcdType):
		return ocpEtcd
	}
	return ""
}

// dnsTypeName is the canonical name of service type t in .local.
func dnsTypeName(t string) string { return strings.ToLower(t) + "." + mdnsDomain }

// firstLabel is the first label of a host name, unescaped: the node name
// coredns-mdns derives from an SRV target ("master-0.local." -> "master-0").
func firstLabel(name string) string {
	l, _, _ := strings.Cut(name, ".")
	return l
}

// splitInstance splits a canonical instance name into its first label
// (unescaped) and the service type it belongs to.
func splitInstance(inst string) (label, typ string) {
	// Labels of a canonical name are in presentation format: a dot or
	// space inside the instance label is escaped.
	for i := 0; i < len(inst); i++ {
		switch inst[i] {
		case '\\':
			i++
		case '.':
			return unescapeLabel(inst[:i]), inst[i+1:]
		}
	}
	return unescapeLabel(inst), ""
}

// unescapeLabel turns a label in presentation format back into its bytes.
func unescapeLabel(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		if i+2 < len(s) && isDigit(s[i]) && isDigit(s[i+1]) && isDigit(s[i+2]) {
			b.WriteByte((s[i]-'0')*100 + (s[i+1]-'0')*10 + (s[i+2] - '0'))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

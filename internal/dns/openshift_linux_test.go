//go:build linux

package dns

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// openshiftPeer returns the path of a peer binary ("mdns-publisher" or
// "coredns"), building it on first use (peers.OpenShiftPeer); it skips t
// if it cannot be built (no module proxy), and fails it if the proxy
// serves other contents than the recorded checksum.
func openshiftPeer(t *testing.T, name string) string {
	t.Helper()
	bin, err := peers.OpenShiftPeer(name)
	switch {
	case errors.Is(err, peers.ErrChecksum):
		t.Fatal(err)
	case err != nil:
		t.Skipf("skipping: cannot build OpenShift's %s from source: %v", name, err)
	}
	return bin
}

// mdnsPublisherConfig is the config machine-config-operator renders for
// mdns-publisher (templates/master/00-master/baremetal/files/
// baremetal-mdns-config.yaml; the worker's has no Etcd service).
func mdnsPublisherConfig(cluster, host, addr string, master bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "bind_address = %q\ncollision_avoidance = \"hostname\"\n", addr)
	svc := func(kind, typ string, port int) {
		fmt.Fprintf(&b, "\nservice {\n    name = \"%s %s\"\n    host_name = \"%s.local.\"\n    type = %q\n    domain = \"local.\"\n    port = %d\n    ttl = 3200\n}\n",
			cluster, kind, host, typ, port)
	}
	if master {
		svc("Etcd", "_etcd-server-ssl._tcp", 2380)
	}
	svc("Workstation", "_workstation._tcp", 42424)
	return b.String()
}

// ocpMDNSFamily is how the nodes of an OpenShift cluster are addressed, as
// the machine-config-operator sees them.
type ocpMDNSFamily struct {
	prefix string // testnet namespace prefix, one per variant
	// noIPv4 removes the hosts' IPv4 addresses: an IPv6 single-stack
	// node has its IPv6 address and its link-local one only.
	noIPv4 bool
	// bind is the node address OpenShift renders into mdns-publisher's
	// bind_address and the Corefile's "mdns" line: the node's address of
	// the cluster's first (primary) family.
	bind func(*testnet.Host) netip.Addr
	// node is vipstack's -node-addr, the primary family first.
	node func(*testnet.Host) []netip.Addr
	api  netip.Addr // the API VIP: clusterdns's api record and -mdns-exclude
}

// ocpMDNSRun is a running cluster of runOpenShiftMDNS.
type ocpMDNSRun struct {
	h1, h2, h3   *testnet.Host
	started      time.Time // when vipstack dns started
	stopCoreDNS  func()
	fromVipstack []ocpQuery // what vipstack must answer for the OpenShift nodes
	answers      func(h *testnet.Host, server netip.Addr, q ocpQuery) func() string
}

// ocpQuery is a query and its whole expected answer section.
type ocpQuery struct {
	name, typ string
	want      []string
}

// addrRRs are dig's lines for name's addresses in addrs, A before AAAA,
// keeping only the records of type typ ("" = both types).
func addrRRs(name, typ string, addrs ...netip.Addr) []string {
	var out []string
	for _, t := range []string{"A", "AAAA"} {
		for _, a := range addrs {
			if a.Is4() == (t == "A") && (typ == "" || typ == t) {
				out = append(out, name+". "+t+" "+a.String())
			}
		}
	}
	return out
}

// runOpenShiftMDNS is a cluster in the middle of a migration: host 1 runs
// `vipstack dns` (master-0), host 2 is an OpenShift master still on the
// static pods (the real mdns-publisher, with the config the
// machine-config-operator renders, and CoreDNS with the real coredns-mdns
// plugin, with the Corefile line it renders: "mdns <base domain> 0
// <cluster> <node address>"), host 3 an OpenShift worker (mdns-publisher
// only). It checks that each side's DNS answers for the other side's nodes,
// and returns the running cluster.
func runOpenShiftMDNS(t *testing.T, fam ocpMDNSFamily) *ocpMDNSRun {
	t.Helper()
	testnet.RequireRoot(t)
	for _, b := range []string{"dig", "unshare"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("skipping: needs %s", b)
		}
	}
	publisher := openshiftPeer(t, "mdns-publisher")
	coredns := openshiftPeer(t, "coredns")
	topo := testnet.New(t, testnet.Options{Hosts: 3, Prefix: fam.prefix})
	r := &ocpMDNSRun{h1: topo.Hosts[0], h2: topo.Hosts[1], h3: topo.Hosts[2]}
	h1, h2, h3 := r.h1, r.h2, r.h3
	if fam.noIPv4 {
		// With no IPv4 address, the peers and vipstack still send IPv4
		// multicast (measured: every host's IPv4 output counter goes
		// up): drop every IPv4 packet on the link too, so that only
		// ff02::fb can carry mDNS.
		for _, h := range topo.Hosts {
			if out, err := h.Run("ip", "addr", "del", h.IPv4.String(), "dev", h.Link); err != nil {
				t.Fatalf("ip addr del %s in %s: %v: %s", h.IPv4, h.Name, err, out)
			}
			c := h.Command("nft", "-f", "-")
			c.Stdin = strings.NewReader(fmt.Sprintf("table inet vsd6_noipv4 {\n\tchain in {\n\t\ttype filter hook input priority filter; policy accept;\n\t\tiifname %q meta nfproto ipv4 counter drop\n\t}\n\tchain out {\n\t\ttype filter hook output priority filter; policy accept;\n\t\toifname %q meta nfproto ipv4 counter drop\n\t}\n}\n", h.Link, h.Link))
			if out, err := c.CombinedOutput(); err != nil {
				t.Fatalf("nft in %s: %v: %s", h.Name, err, out)
			}
			t.Cleanup(func() {
				if t.Failed() {
					out, _ := h.Run("nft", "list", "table", "inet", "vsd6_noipv4")
					t.Logf("%s: %s", h.Name, out)
				}
			})
		}
	}
	const zone = "ostest.example.com"
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	nodeAddrs := fam.node(h1)
	addrList := make([]string, len(nodeAddrs))
	for i, a := range nodeAddrs {
		addrList[i] = a.String()
	}
	r.started = time.Now()
	startDNS(t, h1, ". {\n    clusterdns "+zone+" {\n        api "+fam.api.String()+"\n    }\n}\n",
		"-mdns-cluster", "ostest", "-node-name", "master-0", "-node-role", "master",
		"-node-addr", strings.Join(addrList, ","), "-mdns-exclude", fam.api.String())
	peers.StartUTS(t, h2, "master-1", publisher, "--config",
		write("master-1.hcl", mdnsPublisherConfig("ostest", "master-1", fam.bind(h2).String(), true)))
	peers.StartUTS(t, h3, "worker-0", publisher, "--config",
		write("worker-0.hcl", mdnsPublisherConfig("ostest", "worker-0", fam.bind(h3).String(), false)))
	r.stopCoreDNS = peers.StartUTS(t, h2, "master-1", coredns, "-conf",
		write("Corefile", ". {\n    errors\n    mdns "+zone+" 0 ostest "+fam.bind(h2).String()+"\n}\n")).Kill

	r.answers = func(h *testnet.Host, server netip.Addr, q ocpQuery) func() string {
		return func() string {
			got := dig(t, h, "@"+server.String(), q.name, q.typ)
			if diff := cmp.Diff(q.want, got.Answer); diff != "" {
				return fmt.Sprintf("%s %s at %s (-want +got):\n%s", q.name, q.typ, server, diff)
			}
			return ""
		}
	}
	// mdns-publisher publishes its bind_address alone, so vipstack has
	// that one address for an OpenShift node, and answers the other
	// type's query with no record.
	at1, at2 := fam.bind(h1), fam.bind(h2)
	// The bind address's type first: the TTL subtest samples
	// r.fromVipstack[:2].
	types := []string{"A", "AAAA"}
	if at2.Is6() {
		types[0], types[1] = types[1], types[0]
	}
	for _, typ := range types {
		r.fromVipstack = append(r.fromVipstack,
			ocpQuery{"master-1." + zone, typ, addrRRs("master-1."+zone, typ, at2)},
			ocpQuery{"worker-0." + zone, typ, addrRRs("worker-0."+zone, typ, fam.bind(h3))},
			ocpQuery{"etcd-1." + zone, typ, addrRRs("etcd-1."+zone, typ, at2)})
	}
	r.fromVipstack = append(r.fromVipstack, ocpQuery{"_etcd-server-ssl._tcp." + zone, "SRV", []string{
		"_etcd-server-ssl._tcp." + zone + ". SRV 0 10 2380 etcd-0." + zone + ".",
		"_etcd-server-ssl._tcp." + zone + ". SRV 0 10 2380 etcd-1." + zone + ".",
	}})
	t.Run("vipstack answers for the nodes mdns-publisher publishes", func(t *testing.T) {
		for _, q := range r.fromVipstack {
			eventually(t, 15*time.Second, r.answers(h1, at1, q))
		}
	})
	t.Run("OpenShift's CoreDNS answers for the vipstack node", func(t *testing.T) {
		// coredns-mdns browses for a second every ~7 s, and answers an A
		// or AAAA query with the first IPv4 and the first IPv6 address of
		// the host.
		var first []netip.Addr
		for _, a := range nodeAddrs {
			if len(first) == 0 || first[0].Is4() != a.Is4() {
				first = append(first, a)
			}
		}
		both := addrRRs("master-0."+zone, "", first...)
		eventually(t, 20*time.Second, r.answers(h2, at2, ocpQuery{"master-0." + zone, "A", both}))
		eventually(t, 20*time.Second, r.answers(h2, at2, ocpQuery{"master-0." + zone, "AAAA", both}))
		eventually(t, 20*time.Second, r.answers(h2, at2, ocpQuery{"_etcd-server-ssl._tcp." + zone, "SRV", []string{
			"_etcd-server-ssl._tcp." + zone + ". SRV 0 10 2380 master-0." + zone + ".",
			"_etcd-server-ssl._tcp." + zone + ". SRV 0 10 2380 master-1." + zone + ".",
		}}))
	})
	return r
}

// TestRootOpenShiftMDNS runs runOpenShiftMDNS on an IPv4 cluster whose
// nodes also have IPv6 addresses, then checks that vipstack keeps the
// OpenShift nodes past the TTL of their address.
func TestRootOpenShiftMDNS(t *testing.T) {
	r := runOpenShiftMDNS(t, ocpMDNSFamily{
		prefix: "vsDocp",
		bind:   func(h *testnet.Host) netip.Addr { return h.IPv4.Addr() },
		node:   func(h *testnet.Host) []netip.Addr { return []netip.Addr{h.IPv4.Addr(), h.IPv6.Addr()} },
		api:    netip.MustParseAddr("198.18.0.5"),
	})
	if t.Failed() || testing.Short() {
		return
	}
	t.Run("past the 120 s TTL of mdns-publisher's address", func(t *testing.T) {
		// mdns-publisher answers no query for its host name: vipstack
		// must make it send its address (TTL 120 s) again in time.
		// coredns-mdns's browse every ~7 s would do it for everybody on
		// the link: it goes first, as when the last OpenShift node moves
		// to vipstack. vipstack's own browses (1, 2, 4, ... s apart from
		// its start) also bring the address, the one at ~127 s last
		// before ~255 s: the address must not lapse in between, nor
		// anywhere else. About 4 minutes, so not with -short.
		r.stopCoreDNS()
		at1 := r.h1.IPv4.Addr()
		for time.Since(r.started) < 265*time.Second {
			for _, q := range r.fromVipstack[:2] {
				if msg := r.answers(r.h1, at1, q)(); msg != "" {
					t.Fatalf("%v after vipstack started: %s", time.Since(r.started).Round(time.Second), msg)
				}
			}
			time.Sleep(time.Second) // sampling the answers while a peer's TTL runs, not waiting for a timer of ours
		}
	})
}

// TestRootOpenShiftMDNSIPv6 runs runOpenShiftMDNS on the two IPv6 clusters
// OpenShift installs: IPv6 single-stack (the hosts have no IPv4 address,
// so everything goes over ff02::fb) and dual-stack with IPv6 first
// (machineNetwork's first entry IPv6: mdns-publisher and coredns-mdns bind
// the IPv6 address, vipstack publishes both).
func TestRootOpenShiftMDNSIPv6(t *testing.T) {
	for _, tc := range []struct {
		name string
		fam  ocpMDNSFamily
	}{
		{name: "single-stack", fam: ocpMDNSFamily{
			prefix: "vsD6s",
			noIPv4: true,
			bind:   func(h *testnet.Host) netip.Addr { return h.IPv6.Addr() },
			node:   func(h *testnet.Host) []netip.Addr { return []netip.Addr{h.IPv6.Addr()} },
			api:    netip.MustParseAddr("fd00:bb::5"),
		}},
		{name: "dual-stack IPv6 primary", fam: ocpMDNSFamily{
			prefix: "vsD6d",
			bind:   func(h *testnet.Host) netip.Addr { return h.IPv6.Addr() },
			node:   func(h *testnet.Host) []netip.Addr { return []netip.Addr{h.IPv6.Addr(), h.IPv4.Addr()} },
			api:    netip.MustParseAddr("fd00:bb::5"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { runOpenShiftMDNS(t, tc.fam) })
	}
}

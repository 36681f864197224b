//go:build linux

package dns

import (
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

// startPublisher runs mdns-publisher (bin) with config in h, under
// hostname (its collision_avoidance = "hostname" appends it).
func startPublisher(t *testing.T, h *testnet.Host, bin, hostname, config string) *peers.Proc {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.hcl")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	return peers.StartUTS(t, h, hostname, bin, "--config", path)
}

// inactionConfig is mdns-publisher's config without collision_avoidance
// (its default, "inaction"): the instance labels are "<cluster> Etcd" and
// "<cluster> Workstation" alone, as written.
func inactionConfig(cluster, host, addr string, master bool) string {
	c := mdnsPublisherConfig(cluster, host, addr, master)
	return strings.Replace(c, "collision_avoidance = \"hostname\"\n", "", 1)
}

// openstack42MasterConfig is the master config machine-config-operator
// rendered for OpenShift 4.2 on OpenStack
// (templates/master/00-master/openstack/files/openstack-mdns-config.yaml,
// commit 1f0cb59f): the Etcd instance on host etcd-N.local., the
// Workstation instance on master-N.local., and a third instance,
// "<cluster> EtcdWorkstation" of type _workstation._tcp on etcd-N.local.
// (TTL 300), N the number ending the node's host name.
func openstack42MasterConfig(cluster string, n int, addr string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "bind_address = %q\ncollision_avoidance = \"hostname\"\n", addr)
	for _, s := range []struct {
		kind, host, typ string
		port, ttl       int
	}{
		{"Etcd", "etcd", "_etcd-server-ssl._tcp", 2380, 3200},
		{"Workstation", "master", "_workstation._tcp", 42424, 3200},
		{"EtcdWorkstation", "etcd", "_workstation._tcp", 42424, 300},
	} {
		fmt.Fprintf(&b, "\nservice {\n    name = \"%s %s\"\n    host_name = \"%s-%d.local.\"\n    type = %q\n    domain = \"local.\"\n    port = %d\n    ttl = %d\n}\n",
			cluster, s.kind, s.host, n, s.typ, s.port, s.ttl)
	}
	return b.String()
}

// TestRootMDNSDirectivePublisher runs the mdns directive (vipstack dns
// with OpenShift's on-prem Corefile, testdata/openshift-mdns.Corefile) on
// host 1 against the real mdns-publisher on the OpenShift nodes, and the
// real OpenShift CoreDNS (coredns-mdns) on host 6, the reference, with the
// same mdns line. Changes to OpenShift's Corefile: this topology's
// addresses, MIN_SRV 2 instead of 0 (to see the SRV wait for the masters),
// "cache 5" instead of 30 (so that a name that went away is seen gone
// within the test's bound).
//
//   - master-1 (host 2, the machine-config-operator's master config) and
//     worker-0 (host 3, its worker config) answer A with their
//     bind_address, on both servers; AAAA is an empty NOERROR on vipstack
//     (mdns-publisher publishes the bind address alone).
//   - the worker on host 5 has a 55-byte host name, so mdns-publisher cuts
//     its instance label ("ostest Workstat" + hash + tail): both servers
//     answer for it under its host name.
//   - _etcd-server-ssl._tcp has no SRV record while master-1 is the only
//     master (MIN_SRV 2), then lists the masters once two more start
//     publishing in old forms: host 4 without collision_avoidance ("ostest
//     Etcd" alone), host 7 with OpenShift 4.2's OpenStack config (its Etcd
//     instance on etcd-3.local., so the SRV target is etcd-3; master-3 and
//     etcd-3 both answer A).
//   - after worker-0's, master-2's and master-3's mdns-publisher stop
//     (SIGTERM: their goodbyes), worker-0's name goes upstream (the stub's
//     198.18.0.99) and the SRV record is gone again once the cache lets go.
//
// OpenShift's CoreDNS gave the same answers (measured: this test passes
// against it).
//
// The IPv6 variant binds mdns-publisher and both mdns lines to the hosts'
// IPv6 addresses (as OpenShift renders them on a cluster whose first
// machine network is IPv6): the same, with AAAA records; A gets an empty
// NOERROR answer from vipstack.
func TestRootMDNSDirectivePublisher(t *testing.T) {
	for _, tc := range []struct {
		name string
		bind func(*testnet.Host) netip.Addr
	}{
		{"IPv4", func(h *testnet.Host) netip.Addr { return h.IPv4.Addr() }},
		{"IPv6", func(h *testnet.Host) netip.Addr { return h.IPv6.Addr() }},
	} {
		t.Run(tc.name, func(t *testing.T) { runMDNSDirectivePublisher(t, tc.bind) })
	}
}

func runMDNSDirectivePublisher(t *testing.T, bind func(*testnet.Host) netip.Addr) {
	testnet.RequireRoot(t)
	for _, b := range []string{"dig", "unshare"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("skipping: needs %s", b)
		}
	}
	pubBin := openshiftPeer(t, "mdns-publisher")
	corednsBin := openshiftPeer(t, "coredns")
	topo := testnet.New(t, testnet.Options{Hosts: 7, Prefix: "vsmi"})
	h := topo.Hosts
	const zone = "example.com"
	longWorker := "worker-2-rack-b07-row-11-room-1-datacenter-eu-west-par1"
	if n := len("ostest Workstation-" + longWorker); n <= 63 {
		t.Fatalf("the long worker's instance label is %d bytes; want more than 63, so that mdns-publisher cuts it", n)
	}

	serveStub(t, h[5])
	b, err := os.ReadFile("testdata/openshift-mdns.Corefile")
	if err != nil {
		t.Fatal(err)
	}
	corefile := string(b)
	for _, r := range [][2]string{
		{"mdns example.com 0 ostest 198.18.0.11", "mdns example.com 2 ostest " + bind(h[0]).String()},
		{"forward . 198.18.0.1", "forward . " + h[5].IPv4.Addr().String()},
		{"    cache 30\n", "    cache 5\n"},
	} {
		if !strings.Contains(corefile, r[0]) {
			t.Fatalf("the Corefile has no %q", r[0])
		}
		corefile = strings.Replace(corefile, r[0], r[1], 1)
	}
	p1 := startDNS(t, h[0], corefile)
	dir := t.TempDir()
	ref := filepath.Join(dir, "Corefile")
	if err := os.WriteFile(ref, []byte(".:5300 {\n    errors\n    mdns "+zone+" 2 ostest "+bind(h[5]).String()+"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	peers.StartUTS(t, h[5], "dns-ref", corednsBin, "-conf", ref)

	startPublisher(t, h[1], pubBin, "master-1", mdnsPublisherConfig("ostest", "master-1", bind(h[1]).String(), true))
	worker0 := startPublisher(t, h[2], pubBin, "worker-0", mdnsPublisherConfig("ostest", "worker-0", bind(h[2]).String(), false))
	startPublisher(t, h[4], pubBin, longWorker, mdnsPublisherConfig("ostest", longWorker, bind(h[4]).String(), false))

	// The two servers: vipstack on host 1, port 53, the reference on host
	// 6, port 5300; both asked from host 1.
	servers := []struct {
		name string
		args []string
	}{
		{"vipstack", []string{"@" + h[0].IPv4.Addr().String()}},
		{"OpenShift's CoreDNS", []string{"@" + h[5].IPv4.Addr().String(), "-p", "5300"}},
	}
	answers := func(server int, name, typ string, want ...string) func() string {
		return func() string {
			s := servers[server]
			got := dig(t, h[0], append(append([]string{}, s.args...), name, typ)...)
			if diff := cmp.Diff(want, got.Answer); diff != "" {
				return fmt.Sprintf("%s: %s %s: status %s, answer (-want +got):\n%s", s.name, name, typ, got.Status, diff)
			}
			return ""
		}
	}
	// typ is the type of the bind addresses' records, other the other.
	typ, other := "A", "AAAA"
	if bind(h[0]).Is6() {
		typ, other = other, typ
	}
	a := func(host string, at *testnet.Host) []string {
		return []string{host + "." + zone + ". " + typ + " " + bind(at).String()}
	}
	srv := "_etcd-server-ssl._tcp." + zone
	srvRR := func(host string) string { return srv + ". SRV 0 10 2380 " + host + "." + zone + "." }

	// Wait for vipstack's browser to log the nodes before asking: a
	// query before would go upstream and be cached.
	for _, n := range []string{"master-1", "worker-0", longWorker} {
		eventually(t, 10*time.Second, func() string {
			if strings.Contains(p1.stderr.String(), `msg="mdns: node joined" plugin=mdns domain=example.com. name=`+n+" ") {
				return ""
			}
			return "vipstack's browser has not logged " + n + " joining"
		})
	}
	for i := range servers {
		// coredns-mdns browses for a second every ~7 s.
		bound := 5 * time.Second
		if i == 1 {
			bound = 20 * time.Second
		}
		eventually(t, bound, answers(i, "master-1."+zone, typ, a("master-1", h[1])...))
		eventually(t, bound, answers(i, "worker-0."+zone, typ, a("worker-0", h[2])...))
		eventually(t, bound, answers(i, longWorker+"."+zone, typ, a(longWorker, h[4])...))
		// One master of the two MIN_SRV asks for: no SRV record.
		if msg := answers(i, srv, "SRV")(); msg != "" {
			t.Error(msg)
		}
	}
	if got := dig(t, h[0], "@"+h[0].IPv4.Addr().String(), "master-1."+zone, other); got.Status != "NOERROR" || len(got.Answer) != 0 {
		t.Errorf("vipstack: master-1 %s: status %s, answer %v; want NOERROR and no record", other, got.Status, got.Answer)
	}

	// Two more masters, in old forms.
	master2 := startPublisher(t, h[3], pubBin, "master-2", inactionConfig("ostest", "master-2", bind(h[3]).String(), true))
	master3 := startPublisher(t, h[6], pubBin, "ostest-kx2vb-master-3", openstack42MasterConfig("ostest", 3, bind(h[6]).String()))
	// vipstack: within its browser's view plus "cache 5" of the empty
	// answer above; the reference: its next browse.
	for i, bound := range []time.Duration{10 * time.Second, 20 * time.Second} {
		eventually(t, bound, answers(i, srv, "SRV", srvRR("etcd-3"), srvRR("master-1"), srvRR("master-2")))
		eventually(t, bound, answers(i, "master-2."+zone, typ, a("master-2", h[3])...))
		eventually(t, bound, answers(i, "master-3."+zone, typ, a("master-3", h[6])...))
		eventually(t, bound, answers(i, "etcd-3."+zone, typ, a("etcd-3", h[6])...))
	}

	// Goodbyes.
	worker0.Term(t)
	master2.Term(t)
	master3.Term(t)
	// Upstream's answer: the stub answers A with 198.18.0.99, AAAA with
	// no record.
	upstream := []string{"worker-0." + zone + ". A 198.18.0.99"}
	if typ == "AAAA" {
		upstream = nil
	}
	eventually(t, 10*time.Second, answers(0, "worker-0."+zone, typ, upstream...))
	eventually(t, 10*time.Second, answers(0, srv, "SRV"))
	// The reference forgets both at its next browse (it has no next
	// plugin here: no answer at all).
	eventually(t, 20*time.Second, answers(1, "worker-0."+zone, typ))
	eventually(t, 20*time.Second, answers(1, srv, "SRV"))
	p1.stop(t)
}

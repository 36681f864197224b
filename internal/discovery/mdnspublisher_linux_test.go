//go:build linux

package discovery

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// Root tests against the real mdns-publisher (built from source by
// internal/peers at the version OpenShift ships) publishing the config forms
// OpenShift has rendered over its releases.

// publisherService is one "service" block of mdns-publisher's config.
type publisherService struct {
	name, host, typ string
	port, ttl       int
}

// publisherConfig is mdns-publisher's HCL config: bind_address, the
// collision_avoidance line if collision is not "" (mdns-publisher's default
// is "inaction": the instance label is the service name as written), and
// the services.
func publisherConfig(bind netip.Addr, collision string, svcs ...publisherService) string {
	var b strings.Builder
	fmt.Fprintf(&b, "bind_address = %q\n", bind.String())
	if collision != "" {
		fmt.Fprintf(&b, "collision_avoidance = %q\n", collision)
	}
	for _, s := range svcs {
		fmt.Fprintf(&b, "\nservice {\n    name = %q\n    host_name = %q\n    type = %q\n    domain = \"local.\"\n    port = %d\n    ttl = %d\n}\n",
			s.name, s.host, s.typ, s.port, s.ttl)
	}
	return b.String()
}

// mcoServices are the services machine-config-operator renders for a node
// (templates/*/00-*/baremetal/files/baremetal-mdns-config.yaml, 4.3 on):
// "<cluster> Etcd" on masters, "<cluster> Workstation" on every node, both
// on host "<short host name>.local.", TTL 3200.
func mcoServices(cluster, host string, master bool) []publisherService {
	var out []publisherService
	if master {
		out = append(out, publisherService{cluster + " Etcd", host + ".local.", MDNSEtcdType, ocpEtcdPort, 3200})
	}
	return append(out, publisherService{cluster + " Workstation", host + ".local.", MDNSWorkstationType, ocpWorkstationPort, 3200})
}

// startPublisher runs the real mdns-publisher in h with config, under
// hostname (collision_avoidance = "hostname" appends the short
// os.Hostname() to every instance label). It skips t if the peer cannot
// be built.
func startPublisher(t *testing.T, h *testnet.Host, hostname, config string) *peers.Proc {
	t.Helper()
	bin, err := peers.OpenShiftPeer("mdns-publisher")
	switch {
	case errors.Is(err, peers.ErrChecksum):
		t.Fatal(err)
	case err != nil:
		t.Skipf("skipping: cannot build OpenShift's mdns-publisher from source: %v", err)
	}
	path := filepath.Join(t.TempDir(), "config.hcl")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	return peers.StartUTS(t, h, hostname, bin, "--config", path)
}

// TestRootMDNSPublisherConfigForms runs the browser `vipstack dns
// -mdns-cluster` and `vipstack node` use (MDNS with OpenShift, publishing
// master-0 itself) on host 1, and the real mdns-publisher on the other
// hosts, each publishing one of the forms OpenShift's configs give its
// instance labels; vipstack must report each node under its host name (the
// first label of the SRV target, as coredns-mdns names it), with its
// bind_address, master when it publishes an Etcd instance:
//
//   - "inaction": a config without collision_avoidance (mdns-publisher's
//     default, "inaction"): the labels are "ostest Etcd" and "ostest
//     Workstation" alone. Only one node may publish that way: two nodes
//     publishing the same instance name flush each other's SRV record
//     (measured: vipstack then reports one, then the other), and
//     coredns-mdns (zeroconf's browse takes the first entry per instance
//     name) sees one of them per browse too.
//   - "hostname": the current config: "ostest Workstation-worker-1".
//   - "hostname", long host name: mdns-publisher cuts a label longer than 63
//     bytes (see ocpCutOf): measured, "ostest Workstation-" + a 55-byte host
//     name went on the wire as "ostest Workstatd14986a5c757dc5f338fef8015b6ccb7ter-eu-west-par1",
//     "ostest Etcd-" + another as "ostest Etcd-masca2d87fb4c5453d9f37d5f5d59ffb0f1ter-eu-west-par1".
//     Before ocpCutOf vipstack missed the worker (the master came through
//     its Etcd label, which happened to keep "ostest Etcd-").
//
// Then a publisher's SIGTERM (its goodbye) removes its node at once.
func TestRootMDNSPublisherConfigForms(t *testing.T) {
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 5, Prefix: "vsmi"})
	h := topo.Hosts
	const cluster = "ostest"
	// 55 bytes: with "ostest Etcd-" in front, 67 bytes, over 63.
	longMaster := "master-2-rack-a12-row-04-room-3-datacenter-eu-west-par1"
	longWorker := "worker-2-rack-b07-row-11-room-1-datacenter-eu-west-par1"
	if len(longMaster) != 55 || len(longWorker) != 55 {
		t.Fatalf("long host names of %d and %d bytes, want 55", len(longMaster), len(longWorker))
	}
	pubs := map[string]*peers.Proc{}
	for _, p := range []struct {
		h         *testnet.Host
		host      string
		collision string
		master    bool
	}{
		{h[1], "master-1", "", true},
		{h[2], "worker-1", "hostname", false},
		{h[3], longMaster, "hostname", true},
		{h[4], longWorker, "hostname", false},
	} {
		pubs[p.host] = startPublisher(t, p.h, p.host, publisherConfig(p.h.IPv4.Addr(), p.collision, mcoServices(cluster, p.host, p.master)...))
	}
	log, _ := runLocal(t, h[0], &MDNS{
		Cluster:   cluster,
		OpenShift: true,
		Self:      Node{Name: "master-0", Role: Master, Addrs: []netip.Addr{h[0].IPv4.Addr()}},
	})
	// The report has this node too; sorted by name.
	want := []string{
		"master-0 master " + h[0].IPv4.Addr().String(),
		"master-1 master " + h[1].IPv4.Addr().String(),
		longMaster + " master " + h[3].IPv4.Addr().String(),
		"worker-1 worker " + h[2].IPv4.Addr().String(),
		longWorker + " worker " + h[4].IPv4.Addr().String(),
	}
	// mdns-publisher announces at its start; vipstack browses at its start
	// and 1, 2, 4 s on: 10 s is ample.
	waitReport(t, log, 10*time.Second, want)

	for _, name := range []string{longWorker, "master-1"} {
		pubs[name].Term(t)
		var left []string
		for _, n := range want {
			if !strings.HasPrefix(n, name+" ") {
				left = append(left, n)
			}
		}
		want = left
		// A goodbye (TTL 0) removes the records at once: well within 3 s.
		waitReport(t, log, 3*time.Second, want)
	}
}

// waitReport waits (bounded) until log's latest report is want (summary
// lines) and fails with the difference otherwise.
func waitReport(t *testing.T, log *nodeLog, bound time.Duration, want []string) {
	t.Helper()
	deadline := time.After(bound)
	for {
		log.mu.Lock()
		var got []string
		if n := len(log.hist); n > 0 {
			got = summary(log.hist[n-1].nodes)
		}
		log.mu.Unlock()
		diff := cmp.Diff(want, got)
		if diff == "" {
			return
		}
		select {
		case <-log.note:
		case <-deadline:
			t.Fatalf("vipstack's latest report after %v (-want +got):\n%s", bound, diff)
		}
	}
}

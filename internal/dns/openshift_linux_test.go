//go:build linux

package dns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/syncbuf"
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

// startOpenShiftPeer runs an OpenShift peer in h with its own UTS namespace
// and host name (mdns-publisher appends os.Hostname() to its instance
// names), logging to a buffer shown if t fails. stop kills it.
func startOpenShiftPeer(t *testing.T, h *testnet.Host, hostname string, argv ...string) (stop func()) {
	t.Helper()
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	c := h.Command("unshare", "--uts", "sh", "-c", "hostname "+hostname+" && exec "+strings.Join(quoted, " "))
	out := &syncbuf.Buffer{}
	c.Stdout, c.Stderr = out, out
	if err := h.StartFor(t, c); err != nil {
		t.Fatalf("%s: %v", argv[0], err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s in %s (%s) logged:\n%s", filepath.Base(argv[0]), h.Name, hostname, out)
		}
	})
	return func() {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		_ = c.Wait()
	}
}

// TestRootOpenShiftMDNS is a cluster in the middle of a migration: host 1
// runs `vipstack dns` (master-0), host 2 is an OpenShift master still on the
// static pods (the real mdns-publisher, with the config the
// machine-config-operator renders, and CoreDNS with the real coredns-mdns
// plugin, with the Corefile line it renders: "mdns <base domain> 0
// <cluster> <node address>"), host 3 an OpenShift worker (mdns-publisher
// only). Each side's DNS must answer for the other side's nodes.
func TestRootOpenShiftMDNS(t *testing.T) {
	testnet.RequireRoot(t)
	for _, b := range []string{"dig", "unshare"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("skipping: needs %s", b)
		}
	}
	publisher := openshiftPeer(t, "mdns-publisher")
	coredns := openshiftPeer(t, "coredns")
	topo := testnet.New(t, testnet.Options{Hosts: 3, Prefix: "vsDocp"})
	h1, h2, h3 := topo.Hosts[0], topo.Hosts[1], topo.Hosts[2]
	const zone = "ostest.example.com"
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	started := time.Now()
	startDNS(t, h1, ". {\n    clusterdns "+zone+" {\n        api 198.18.0.5\n    }\n}\n",
		"-mdns-cluster", "ostest", "-node-name", "master-0", "-node-role", "master",
		"-node-addr", h1.IPv4.Addr().String()+","+h1.IPv6.Addr().String(), "-mdns-exclude", "198.18.0.5")
	startOpenShiftPeer(t, h2, "master-1", publisher, "--config",
		write("master-1.hcl", mdnsPublisherConfig("ostest", "master-1", h2.IPv4.Addr().String(), true)))
	startOpenShiftPeer(t, h3, "worker-0", publisher, "--config",
		write("worker-0.hcl", mdnsPublisherConfig("ostest", "worker-0", h3.IPv4.Addr().String(), false)))
	stopCoreDNS := startOpenShiftPeer(t, h2, "master-1", coredns, "-conf",
		write("Corefile", ". {\n    errors\n    mdns "+zone+" 0 ostest "+h2.IPv4.Addr().String()+"\n}\n"))

	answers := func(h *testnet.Host, server, name, typ string, want []string) func() string {
		return func() string {
			got := dig(t, h, "@"+server, name, typ)
			if diff := cmp.Diff(want, got.Answer); diff != "" {
				return fmt.Sprintf("%s %s at %s (-want +got):\n%s", name, typ, server, diff)
			}
			return ""
		}
	}
	at1, at2 := h1.IPv4.Addr().String(), h2.IPv4.Addr().String()
	fromVipstack := []struct {
		name, typ string
		want      []string
	}{
		{"master-1." + zone, "A", []string{"master-1." + zone + ". A " + at2}},
		{"worker-0." + zone, "A", []string{"worker-0." + zone + ". A " + h3.IPv4.Addr().String()}},
		{"etcd-1." + zone, "A", []string{"etcd-1." + zone + ". A " + at2}},
		{"_etcd-server-ssl._tcp." + zone, "SRV", []string{
			"_etcd-server-ssl._tcp." + zone + ". SRV 0 10 2380 etcd-0." + zone + ".",
			"_etcd-server-ssl._tcp." + zone + ". SRV 0 10 2380 etcd-1." + zone + ".",
		}},
	}
	t.Run("vipstack answers for the nodes mdns-publisher publishes", func(t *testing.T) {
		for _, q := range fromVipstack {
			eventually(t, 15*time.Second, answers(h1, at1, q.name, q.typ, q.want))
		}
	})
	t.Run("OpenShift's CoreDNS answers for the vipstack node", func(t *testing.T) {
		// coredns-mdns browses for a second every ~7 s, and answers an A
		// or AAAA query with the first IPv4 and the first IPv6 address of
		// the host.
		both := []string{"master-0." + zone + ". A " + at1, "master-0." + zone + ". AAAA " + h1.IPv6.Addr().String()}
		eventually(t, 20*time.Second, answers(h2, at2, "master-0."+zone, "A", both))
		eventually(t, 20*time.Second, answers(h2, at2, "master-0."+zone, "AAAA", both))
		eventually(t, 20*time.Second, answers(h2, at2, "_etcd-server-ssl._tcp."+zone, "SRV", []string{
			"_etcd-server-ssl._tcp." + zone + ". SRV 0 10 2380 master-0." + zone + ".",
			"_etcd-server-ssl._tcp." + zone + ". SRV 0 10 2380 master-1." + zone + ".",
		}))
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
		stopCoreDNS()
		for time.Since(started) < 265*time.Second {
			for _, q := range fromVipstack[:2] {
				if msg := answers(h1, at1, q.name, q.typ, q.want)(); msg != "" {
					t.Fatalf("%v after vipstack started: %s", time.Since(started).Round(time.Second), msg)
				}
			}
			time.Sleep(time.Second) // sampling the answers while a peer's TTL runs, not waiting for a timer of ours
		}
	})
}

//go:build linux

package dns

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
)

// The OpenShift peers, built from source at the versions OpenShift ships
// (never a downloaded binary) into the user's cache directory, keyed by
// version, so only the first run pays for the build.
const (
	// mdns-publisher: the version the latest openshift/coredns-mdns go.mod
	// requires (the proxy serves it; its module zip has no vendor
	// directory, so it builds with -mod=mod from its go.sum).
	mdnsPublisherModule  = "github.com/openshift/mdns-publisher"
	mdnsPublisherVersion = "v0.0.0-20220222182051-8fef1ccb075f"
	// coredns-mdns: the version openshift/coredns's go.mod requires, the
	// mdns plugin of OpenShift's CoreDNS image. The checksum database has
	// no entry for it (lookup: 404), so it is fetched from the proxy with
	// GONOSUMDB for that module alone, and checked against corednsMDNSSum
	// instead: the go.sum lines recorded at its first download here
	// (2026-11-23), which the build's go.sum starts with, so that go
	// refuses different contents ("SECURITY ERROR"). Its dependencies are
	// verified by the checksum database as usual.
	corednsMDNSModule  = "github.com/openshift/coredns-mdns"
	corednsMDNSVersion = "v0.0.0-20210625150643-8c0b6474833f"
	corednsMDNSSum     = corednsMDNSModule + " " + corednsMDNSVersion + " h1:fNTw437SGd4KAzm32K6ibCPtUXhQgDrhpp+xAcoPd+g=\n" +
		corednsMDNSModule + " " + corednsMDNSVersion + "/go.mod h1:yixafteIRjJo5rpW96/rCpP3JdnIB4TMqzVW0kn+5wU=\n"
	// The CoreDNS that coredns-mdns at that version requires.
	corednsForMDNS = "v1.8.1"
)

// openshiftPeer returns the path of a peer binary ("mdns-publisher" or
// "coredns"), building it on first use; it skips t if it cannot be built
// (no module proxy).
func openshiftPeer(t *testing.T, name string) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skipf("skipping: no cache directory for the OpenShift peers: %v", err)
	}
	var version string
	switch name {
	case "mdns-publisher":
		version = mdnsPublisherVersion
	case "coredns":
		version = corednsMDNSVersion
	default:
		t.Fatalf("unknown peer %q", name)
	}
	dir := filepath.Join(cache, "vipstack-peers", name+"-"+version)
	bin := filepath.Join(dir, name)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	src := filepath.Join(dir, "src")
	if err := os.RemoveAll(src); err != nil {
		t.Fatal(err)
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	run := func(env []string, args ...string) ([]byte, error) {
		c := exec.Command(goBin, args...)
		c.Dir = src
		c.Env = append(os.Environ(), append([]string{"GOWORK=off", "GOFLAGS=-mod=mod -buildvcs=false"}, env...)...)
		out, err := c.CombinedOutput()
		if err != nil {
			return out, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return out, nil
	}
	build := func() error {
		if err := os.MkdirAll(src, 0o755); err != nil {
			return err
		}
		var env []string
		switch name {
		case "mdns-publisher":
			out, err := run(nil, "mod", "download", "-json", mdnsPublisherModule+"@"+mdnsPublisherVersion)
			if err != nil {
				return err
			}
			var m struct{ Dir string }
			if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
				return fmt.Errorf("go mod download: %v: %s", err, out)
			}
			if out, err := exec.Command("cp", "-r", m.Dir+"/.", src).CombinedOutput(); err != nil {
				return fmt.Errorf("cp: %w: %s", err, out)
			}
			if out, err := exec.Command("chmod", "-R", "u+w", src).CombinedOutput(); err != nil {
				return fmt.Errorf("chmod: %w: %s", err, out)
			}
			if err := os.RemoveAll(filepath.Join(src, "vendor")); err != nil {
				return err
			}
		case "coredns":
			env = []string{"GONOSUMDB=" + corednsMDNSModule}
			main := "// Command coredns is CoreDNS with OpenShift's mdns plugin, a test peer for vipstack.\n" +
				"package main\n\nimport (\n" +
				"\t\"github.com/coredns/coredns/core/dnsserver\"\n\t\"github.com/coredns/coredns/coremain\"\n\n" +
				"\t_ \"github.com/coredns/coredns/plugin/errors\"\n\t_ \"" + corednsMDNSModule + "\"\n)\n\n" +
				"func init() { dnsserver.Directives = []string{\"errors\", \"mdns\"} }\n\nfunc main() { coremain.Run() }\n"
			mod := "module vipstack.test/coredns-mdns-peer\n\ngo 1.21\n\nrequire (\n" +
				"\tgithub.com/coredns/coredns " + corednsForMDNS + "\n\t" + corednsMDNSModule + " " + corednsMDNSVersion + "\n)\n"
			for f, body := range map[string]string{"main.go": main, "go.mod": mod, "go.sum": corednsMDNSSum} {
				if err := os.WriteFile(filepath.Join(src, f), []byte(body), 0o644); err != nil {
					return err
				}
			}
			if out, err := run(env, "mod", "tidy"); err != nil {
				if strings.Contains(string(out), "SECURITY ERROR") {
					t.Fatalf("%s %s from the module proxy does not match the recorded checksum: %v", corednsMDNSModule, corednsMDNSVersion, err)
				}
				return err
			}
		}
		tmp := bin + ".tmp"
		if _, err := run(env, "build", "-o", tmp, "."); err != nil {
			return err
		}
		return os.Rename(tmp, bin)
	}
	t.Logf("building %s %s into %s (once)", name, version, dir)
	if err := build(); err != nil {
		t.Skipf("skipping: cannot build OpenShift's %s at %s from source: %v", name, version, err)
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

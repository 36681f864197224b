//go:build linux

package dns

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/testnet"
)

// TestRootMDNSDirective runs `vipstack dns` with OpenShift's current
// on-prem Corefile (testdata/openshift-mdns.Corefile, its "mdns" line and
// forward rendered with this topology's addresses, reload checking every
// 2 s instead of 30) on host 1, and a node
// publishing itself as mdns-publisher does (vipstack's own mDNS with
// -mdns-openshift, the default) on host 2; host 3 is the upstream. The
// node's name and the etcd SRV come from mDNS, api and *.apps from the
// templates, other names from upstream; two reloads that keep the mdns
// line keep its browser (one start, one join, the same two sockets), which
// answers on; after the node's goodbye its name
// goes upstream too, once "cache 30" lets go of it (cache sits before mdns,
// as in OpenShift's build).
func TestRootMDNSDirective(t *testing.T) {
	h1, h2, corefile, p1 := openshiftMDNSLab(t, "vshc")
	p2 := startDNS(t, h2, ".:53 {\n    errors\n}\n", "-mdns-cluster", "ostest", "-node-name", "master-1", "-node-role", "master",
		"-node-addr", h2.IPv4.Addr().String()+","+h2.IPv6.Addr().String())

	at := "@" + h1.IPv4.Addr().String()
	answers := func(name, typ string, want ...string) func() string {
		return func() string {
			got := dig(t, h1, at, name, typ)
			if diff := cmp.Diff(want, got.Answer); diff != "" || got.Status != "NOERROR" {
				return fmt.Sprintf("%s %s: status %s, answer (-want +got):\n%s", name, typ, got.Status, diff)
			}
			return ""
		}
	}
	// Wait for the browser to log the node before asking: a query before
	// it would go upstream, and cache 30 would keep that answer (as on
	// OpenShift). Its records arrive within the first browses.
	eventually(t, 15*time.Second, func() string {
		if strings.Contains(p1.stderr.String(), `msg="mdns: node joined" plugin=mdns domain=example.com. name=master-1`) {
			return ""
		}
		return "host 1's browser has not logged master-1 joining"
	})
	for _, q := range []struct {
		name, typ string
		want      []string
	}{
		{"master-1.example.com", "A", []string{"master-1.example.com. A " + h2.IPv4.Addr().String()}},
		{"master-1.example.com", "AAAA", []string{"master-1.example.com. AAAA " + h2.IPv6.Addr().String()}},
		{"_etcd-server-ssl._tcp.example.com", "SRV", []string{"_etcd-server-ssl._tcp.example.com. SRV 0 10 2380 master-1.example.com."}},
		{"api.example.com", "A", []string{"api.example.com. A 198.18.0.5"}},
		{"api-int.example.com", "A", []string{"api-int.example.com. A 198.18.0.5"}},
		{"console-openshift-console.apps.example.com", "A", []string{"console-openshift-console.apps.example.com. A 198.18.0.7"}},
		// Names mdns does not know go on to the templates, then upstream
		// (the stub answers every A query with 198.18.0.99).
		{"nosuch.example.com", "A", []string{"nosuch.example.com. A 198.18.0.99"}},
		{"www.example.org", "A", []string{"www.example.org. A 198.18.0.99"}},
		// The browser publishes nothing: host 1 has no name of its own.
		{"master-0.example.com", "A", []string{"master-0.example.com. A 198.18.0.99"}},
	} {
		if msg := answers(q.name, q.typ, q.want...)(); msg != "" {
			t.Error(msg)
		}
	}

	// A reload keeping the mdns line keeps its browser (mdnsplugin.Browsers):
	// one IPv4 and one IPv6 socket on port 5353 before and after, no second
	// start, no second join.
	mdnsSockets := func() int {
		out, err := h1.Run("ss", "-Huan", "sport = :5353")
		if err != nil {
			t.Fatalf("ss: %v: %s", err, out)
		}
		return len(strings.Fields(strings.TrimSpace(out))) / 5 // ss -H prints 5 columns per socket
	}
	if n := mdnsSockets(); n != 2 {
		t.Errorf("before the reload: %d mDNS sockets, want 2", n)
	}
	for i := 1; i <= 2; i++ {
		edited := strings.Replace(corefile, "    cache 30\n", fmt.Sprintf("    cache %d\n", 30-i), 1)
		if err := os.WriteFile(p1.path, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		eventually(t, 15*time.Second, func() string {
			if strings.Count(p1.stderr.String(), "Reloading complete") >= i {
				return ""
			}
			return fmt.Sprintf("no reload %d yet", i)
		})
		eventually(t, 10*time.Second, func() string {
			if n := mdnsSockets(); n != 2 {
				return fmt.Sprintf("after reload %d: %d mDNS sockets, want 2", i, n)
			}
			return ""
		})
	}
	if n := strings.Count(p1.stderr.String(), `msg="mdns: starting" plugin=mdns`); n != 1 {
		t.Errorf("after the reloads: %d browsers started, want 1", n)
	}
	if n := strings.Count(p1.stderr.String(), `msg="mdns: node joined" plugin=mdns domain=example.com. name=master-1`); n != 1 {
		t.Errorf("after the reloads: master-1 joined %d times, want 1", n)
	}
	if msg := answers("_etcd-server-ssl._tcp.example.com", "SRV", "_etcd-server-ssl._tcp.example.com. SRV 0 10 2380 master-1.example.com.")(); msg != "" {
		t.Errorf("after the reloads: %s", msg)
	}

	// The node leaves (SIGTERM: goodbye). Its name is upstream's once
	// cache 30 expires the record it holds.
	p2.stop(t)
	eventually(t, 45*time.Second, answers("master-1.example.com", "A", "master-1.example.com. A 198.18.0.99"))
	p1.stop(t)
}

// openshiftMDNSLab is the start of the tests of OpenShift's Corefile: it
// skips without root or dig, makes three hosts (namespace prefix), serves
// the upstream stub on host 3, and runs `vipstack dns` on host 1 with
// openshiftMDNSCorefile; it returns hosts 1 and 2, the Corefile and host
// 1's process.
func openshiftMDNSLab(t *testing.T, prefix string) (h1, h2 *testnet.Host, corefile string, p1 *dnsProc) {
	t.Helper()
	testnet.RequireRoot(t)
	if _, err := exec.LookPath("dig"); err != nil {
		t.Skip("skipping: needs dig (apt-get install dnsutils)")
	}
	topo := testnet.New(t, testnet.Options{Hosts: 3, Prefix: prefix})
	h1, h2, h3 := topo.Hosts[0], topo.Hosts[1], topo.Hosts[2]
	serveStub(t, h3)
	corefile = openshiftMDNSCorefile(t, h1, h3)
	return h1, h2, corefile, startDNS(t, h1, corefile)
}

// openshiftMDNSCorefile returns OpenShift's on-prem Corefile
// (testdata/openshift-mdns.Corefile) rendered for a topology: its mdns line
// bound to host's IPv4 address, forward to upstream's, and the reload
// plugin checking every 2 s (its shortest) instead of 30.
func openshiftMDNSCorefile(t *testing.T, host, upstream *testnet.Host) string {
	t.Helper()
	b, err := os.ReadFile("testdata/openshift-mdns.Corefile")
	if err != nil {
		t.Fatal(err)
	}
	corefile := string(b)
	for _, r := range [][2]string{
		{"mdns example.com 0 ostest 198.18.0.11", "mdns example.com 0 ostest " + host.IPv4.Addr().String()},
		{"forward . 198.18.0.1", "forward . " + upstream.IPv4.Addr().String()},
		{"    reload\n", "    reload 2s 1s\n"},
	} {
		if !strings.Contains(corefile, r[0]) {
			t.Fatalf("the Corefile has no %q", r[0])
		}
		corefile = strings.Replace(corefile, r[0], r[1], 1)
	}
	return corefile
}

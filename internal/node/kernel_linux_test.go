package node

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/lbkernel"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// clientSockets returns the lines of `ss -Htn` output whose peer is not
// on loopback: the node's own checks of the load balancer (https on
// localhost:9445 every 2 s) hold loopback connections there briefly,
// which are not clients' connections carried by the relay.
func clientSockets(ss string) []string {
	var out []string
	for _, line := range strings.Split(ss, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		ap, err := netip.ParseAddrPort(f[len(f)-1])
		if err == nil && ap.Addr().Unmap().IsLoopback() {
			continue
		}
		out = append(out, strings.TrimSpace(line))
	}
	return out
}

// TestNodeKernelDatapath runs two `vipstack node --datapath kernel`
// masters, each beside a stand-in API server on 6443 that answers with
// its master's name. The VIP holder's nftables table captures
// API-VIP:6443 and DNATs it to the masters: a client's requests reach
// both API servers, and a connection the client holds open to the VIP has
// no socket on the load balancer's port (9445), where the relay would
// have carried it. With forwarding off, --check refuses the file.
func TestNodeKernelDatapath(t *testing.T) {
	testnet.RequireRoot(t)
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	topo := testnet.New(t, testnet.Options{Hosts: 2, Client: true, Prefix: "vnk"})
	names := []string{"master-0", "master-1"}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`name: kd
baseDomain: example.com
apiVIPs: [198.18.0.5]
ingressVIPs: [198.18.0.7]
machineNetworks: [198.18.0.0/24]
nodes:
  - {name: master-0, role: master, ips: [%s]}
  - {name: master-1, role: master, ips: [%s]}
`, topo.Hosts[0].IPv4.Addr(), topo.Hosts[1].IPv4.Addr())), 0o600); err != nil {
		t.Fatal(err)
	}
	// Forwarding off (a new namespace's default): refused, naming it.
	check := topo.Hosts[0].Command(bin, "node", "--config", cfg, "--node", names[0], "--datapath", "kernel", "--check")
	if o, err := check.CombinedOutput(); err == nil || !strings.Contains(string(o), "net.ipv4.ip_forward=1") {
		t.Errorf("--check --datapath kernel with ip_forward 0: %v, output %q; want a refusal naming net.ipv4.ip_forward=1", err, o)
	}
	for i, h := range topo.Hosts {
		// DNAT to the other master forwards: the kernel path refuses to
		// start without it (and never turns it on itself).
		if _, err := h.Run("sysctl", "-qw", "net.ipv4.ip_forward=1"); err != nil {
			t.Fatal(err)
		}
		serveName(t, h, 6443, names[i])
		n, err := peers.StartCmd(h, h.Command(bin, "node", "--config", cfg, "--node", names[i], "--datapath", "kernel",
			"--state-dir", filepath.Join(dir, names[i]), "--no-supervisor", "--watch-interval", "0"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = n.Kill()
			if t.Failed() {
				t.Logf("---- %s, last lines:\n%s", names[i], testutil.Tail(n.Log(), 30))
			}
		})
	}
	vip := netip.MustParseAddr("198.18.0.5")
	var holder *testnet.Host
	waitFor(t, 60*time.Second, "one holder of the API VIP", func() (bool, string) {
		hs, err := peers.Holders(topo.Hosts, vip)
		if err == nil && len(hs) == 1 {
			holder = hs[0]
		}
		return err == nil && len(hs) == 1, fmt.Sprint(hs, err)
	})
	api := netip.AddrPortFrom(vip, 6443)
	seen := map[string]int{}
	waitFor(t, 30*time.Second, "both API servers reached through VIP:6443", func() (bool, string) {
		name, err := httpsGet(topo.Client, api, "/readyz")
		if err == nil {
			seen[name]++
		}
		return len(seen) == 2, fmt.Sprint(seen, err)
	})
	t.Logf("answers through VIP:6443: %v", seen)

	table, err := holder.Run("nft", "list", "table", "inet", lbkernel.TableName)
	if err != nil {
		t.Fatalf("the holder has no table %s: %v", lbkernel.TableName, err)
	}
	if !strings.Contains(table, "ip daddr 198.18.0.5 tcp dport 6443") {
		t.Errorf("the holder's table does not capture VIP:6443:\n%s", table)
	}

	// One connection held open through the VIP: the kernel carries it,
	// so nothing on the holder has a socket on the relay's port.
	var c net.Conn
	if err := topo.Client.Do(func() error {
		c, err = net.DialTimeout("tcp", api.String(), 2*time.Second)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true})
	if err := tc.Handshake(); err != nil {
		t.Fatalf("TLS through VIP:6443: %v", err)
	}
	socks, err := holder.Run("ss", "-Htn", "state", "established", "sport", "=", ":9445")
	if err != nil {
		t.Fatal(err)
	}
	if carried := clientSockets(socks); len(carried) > 0 {
		t.Errorf("the relay carries clients' connections on the holder (port 9445), want none:\n%s", strings.Join(carried, "\n"))
	}
	ct, err := holder.Run("conntrack", "-L", "-p", "tcp", "--orig-dst", vip.String(), "--orig-port-dst", "6443", "--dst-nat")
	if err != nil {
		t.Logf("conntrack -L (not checked): %v", err)
	} else if !strings.Contains(ct, "dport=6443") {
		t.Errorf("no DNATed conntrack entry for the connection to VIP:6443:\n%s", ct)
	}
}

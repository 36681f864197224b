package node

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestMachineConfigBalanced runs two `vipstack node` masters with
// loadBalancer.machineConfig, each beside a stand-in API server (6443) and
// machine-config server (22623) that answer every HTTPS request with the
// master's name. A client's requests to API-VIP:22623 reach both masters'
// machine-config servers: the VIP holder redirects the port to its load
// balancer, which balances it over the masters it health-checks (without
// the redirect, every request would reach the holder's own server).
func TestMachineConfigBalanced(t *testing.T) {
	testnet.RequireRoot(t)
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	topo := testnet.New(t, testnet.Options{Hosts: 2, Client: true, Prefix: "vmb"})
	names := []string{"master-0", "master-1"}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`name: mc
baseDomain: example.com
apiVIPs: [198.18.0.5]
ingressVIPs: [198.18.0.7]
machineNetworks: [198.18.0.0/24]
loadBalancer: {machineConfig: true}
nodes:
  - {name: master-0, role: master, ips: [%s]}
  - {name: master-1, role: master, ips: [%s]}
`, topo.Hosts[0].IPv4.Addr(), topo.Hosts[1].IPv4.Addr())), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, h := range topo.Hosts {
		for _, port := range []int{6443, 22623} {
			serveName(t, h, port, names[i])
		}
		n, err := peers.StartCmd(h, h.Command(bin, "node", "--config", cfg, "--node", names[i],
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
	waitFor(t, 60*time.Second, "one holder of the API VIP", func() (bool, string) {
		hs, err := peers.Holders(topo.Hosts, vip)
		return err == nil && len(hs) == 1, fmt.Sprint(hs, err)
	})
	seen := map[string]int{}
	waitFor(t, 30*time.Second, "both machine-config servers reached through VIP:22623", func() (bool, string) {
		name, err := httpsGet(topo.Client, netip.AddrPortFrom(vip, 22623), "/config/master")
		if err == nil {
			seen[name]++
		}
		return len(seen) == 2, fmt.Sprint(seen, err)
	})
	t.Logf("answers through VIP:22623: %v", seen)
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, names) {
		t.Errorf("answered by %v, want %v", keys, names)
	}
}

// serveName serves HTTPS on h's port (every address), answering every
// request with name, until the test ends.
func serveName(t *testing.T, h *testnet.Host, port int, name string) {
	t.Helper()
	var ln net.Listener
	if err := h.Do(func() error {
		var err error
		ln, err = net.Listen("tcp", fmt.Sprintf(":%d", port))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, name) }))
	srv.Listener.Close()
	srv.Listener = ln
	srv.StartTLS()
	t.Cleanup(srv.Close)
}

// httpsGet asks addr for path over TLS (unverified) from inside h's
// namespace and returns the body.
func httpsGet(h *testnet.Host, addr netip.AddrPort, path string) (string, error) {
	var body string
	err := h.Do(func() error {
		c, err := net.DialTimeout("tcp", addr.String(), 2*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true})
		if _, err := fmt.Fprintf(tc, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path, addr.Addr()); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		body = string(b)
		return err
	})
	return body, err
}

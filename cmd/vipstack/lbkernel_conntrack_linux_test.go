package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/lbkernel"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
)

// hostFirewall is a host firewall in its own table, as a distribution's
// would be: input and forward drop what conntrack does not know, except
// the balancer's port and DNATed connections.
const hostFirewall = `table inet hostfw {
	chain input {
		type filter hook input priority filter; policy drop;
		iif "lo" accept
		ct state established,related accept
		tcp dport 9000 accept
	}
	chain forward {
		type filter hook forward priority filter; policy drop;
		ct state established,related accept
		ct status dnat accept
	}
}
`

// TestLBKernelConntrackTimeouts runs `vipstack lb --datapath kernel`
// with a server on another host, behind a host firewall that keeps state
// with conntrack in a table of its own. Connections through the balancer
// work (their replies come back through the firewall's forward chain);
// one the balancer's host opens to the server itself works too (its
// replies pass input only as ct state established). Once closed, the
// DNATed connection's conntrack entry is in TIME_WAIT with at most
// lbkernel.DNATTimeWait left, and the host's own connection with the
// host's timeout (more).
func TestLBKernelConntrackTimeouts(t *testing.T) {
	testnet.RequireRoot(t)
	if _, err := os.Stat("/usr/sbin/conntrack"); err != nil {
		t.Skip("conntrack (the conntrack package) is not installed")
	}
	topo := testnet.New(t, testnet.Options{Hosts: 2, Client: true, Prefix: "vnk"})
	h, srv, client := topo.Hosts[0], topo.Hosts[1], topo.Client
	startKernelBackend(t, srv, "far", srv.IPv4.Addr().String()+":8081")
	path := filepath.Join(t.TempDir(), "h.cfg")
	cfg := fmt.Sprintf(`defaults
  mode tcp
  timeout connect 2s
  timeout client 1m
  timeout server 1m
frontend main
  bind %s:9000
  default_backend far
backend far
  server far %s:8081 check inter 200ms
`, h.IPv4.Addr(), srv.IPv4.Addr())
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Run("sysctl", "-qw", "net.ipv4.ip_forward=1"); err != nil {
		t.Fatal(err)
	}
	fw := filepath.Join(t.TempDir(), "hostfw.nft")
	if err := os.WriteFile(fw, []byte(hostFirewall), 0o644); err != nil {
		t.Fatal(err)
	}
	if o, err := h.Run("nft", "-f", fw); err != nil {
		t.Fatalf("nft -f hostfw: %v\n%s", err, o)
	}
	var out syncbuf.Buffer
	cmd := h.Command(os.Args[0], "-test.run=^TestLBKernelHelperProcess$")
	cmd.Env = append(os.Environ(), "VIPSTACK_LBKERNEL_HELPER_ARGS="+strings.Join([]string{"-f", path, "--datapath", "kernel", "--watch-interval", "0"}, "\n"))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := h.StartFor(t, cmd); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("vipstack lb output:\n%s", out.String())
			if o, err := h.Run("conntrack", "-L"); err == nil {
				t.Logf("conntrack -L:\n%s", o)
			}
		}
	}()
	waitFor(t, "the kernel path's map", func() bool {
		o, err := h.Run("nft", "list", "map", "inet", lbkernel.TableName, "be0")
		return err == nil && strings.Contains(o, "8081")
	})
	if o, err := h.Run("nft", "list", "table", "inet", lbkernel.TableName); err != nil || !strings.Contains(o, `ct timeout set "dnated"`) {
		t.Errorf("the table does not set the ct timeout on its frontends: %v\n%s", err, o)
	}
	for i := range 3 {
		if _, body, err := nsGet(client, h.IPv4.Addr().String()+":9000", "/", false, ""); err != nil || body != "far" {
			t.Errorf("connection %d through the balancer and the host firewall: %q, %v; want far", i, body, err)
		}
	}
	if _, body, err := nsGet(h, srv.IPv4.Addr().String()+":8081", "/", false, ""); err != nil || body != "far" {
		t.Errorf("the balancer's host to the server, replies through input's ct state: %q, %v; want far", body, err)
	}
	// TIME_WAIT entries: DNATed ones at most DNATTimeWait, the host's own
	// connection (and the checks) the host's 120 s.
	list, err := h.Run("conntrack", "-L", "-p", "tcp", "--state", "TIME_WAIT")
	if err != nil {
		t.Fatal(err)
	}
	var dnat, own int
	for _, line := range strings.Split(list, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[3] != "TIME_WAIT" {
			continue
		}
		left, err := strconv.Atoi(f[2])
		if err != nil {
			t.Fatalf("conntrack line %q: no timeout", line)
		}
		switch {
		case strings.Contains(line, "dport=9000"):
			dnat++
			if left > int(lbkernel.DNATTimeWait.Seconds()) {
				t.Errorf("DNATed connection in TIME_WAIT with %d s left, want at most %v: %s", left, lbkernel.DNATTimeWait, line)
			}
		default:
			own++
			if left <= int(lbkernel.DNATTimeWait.Seconds()) {
				t.Errorf("the host's own connection in TIME_WAIT with %d s left, want the host's timeout (120 s): %s", left, line)
			}
		}
	}
	t.Logf("TIME_WAIT entries: %d DNATed (at most %v left), %d of the host's own", dnat, lbkernel.DNATTimeWait, own)
	if dnat == 0 || own == 0 {
		t.Errorf("TIME_WAIT entries: %d DNATed, %d of the host's own; want some of each:\n%s", dnat, own, list)
	}
}

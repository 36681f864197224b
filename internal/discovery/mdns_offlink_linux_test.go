//go:build linux

package discovery

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/testnet"
)

// fakeNodeResponse is a vipstack node's announcement (PTR, SRV, TXT and
// address) for node name of cluster c1 at addr.
func fakeNodeResponse(t *testing.T, name string, addr netip.Addr) []byte {
	t.Helper()
	inst := name + `\@c1._vipstack._tcp.local.`
	rrs := []string{
		"_vipstack._tcp.local. 120 IN PTR " + inst,
		inst + " 120 IN SRV 0 0 9 " + name + ".local.",
		inst + ` 120 IN TXT "cluster=c1" "name=` + name + `" "role=master"`,
	}
	if addr.Is4() {
		rrs = append(rrs, name+".local. 120 IN A "+addr.String())
	} else {
		rrs = append(rrs, name+".local. 120 IN AAAA "+addr.String())
	}
	return peerResponse(t, rrs...)
}

// sendFrom sends b from src (port srcPort, 0 for any) to dst inside h and,
// with wait > 0, returns the first datagram that comes back within wait
// (nil if none).
func sendFrom(h *testnet.Host, src netip.Addr, srcPort uint16, dst netip.AddrPort, b []byte, wait time.Duration) ([]byte, error) {
	var reply []byte
	err := h.Do(func() error {
		c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(src, srcPort)))
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.WriteToUDPAddrPort(b, dst); err != nil {
			return fmt.Errorf("send from %v to %v: %w", src, dst, err)
		}
		if wait <= 0 {
			return nil
		}
		_ = c.SetReadDeadline(time.Now().Add(wait))
		buf := make([]byte, 9000)
		n, _, err := c.ReadFromUDPAddrPort(buf)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		if err != nil {
			return err
		}
		reply = append([]byte(nil), buf[:n]...)
		return nil
	})
	return reply, err
}

// TestMDNSOffLinkIgnored: a datagram sent to the node's own address from a
// source outside the interface's subnets is not from the link, and RFC 6762
// section 11 says to drop it: a response so sent must not put a node into
// the cluster's DNS (an off-link host that reaches UDP 5353 could otherwise
// add nodes, or, with the cache-flush bit, replace a node's address), and a
// query so sent gets no answer (mDNS responders answering off-link unicast
// queries is CERT VU#550620: information leak and traffic reflection).
// avahi-daemon 0.8 (Debian 12) does the same, measured in this topology
// with avahi on h1: no answer to the legacy query from 198.18.7.2, an
// answer to it from 198.18.0.12; avahi-browse -c lists the service
// announced from 198.18.0.12 and not the one from 198.18.7.2
// (avahi-core/server.c: "Received non-local response"). The same datagrams
// from an on-link address are taken, which shows they are valid.
func TestMDNSOffLinkIgnored(t *testing.T) {
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vsx"})
	h1, h2 := topo.Hosts[0], topo.Hosts[1]
	// h2 also holds an address of another subnet, routed by h1 through h2:
	// a host beyond a router, as h1 sees it.
	off4, off6 := netip.MustParseAddr("198.18.7.2"), netip.MustParseAddr("fd00:77::2")
	for _, c := range [][]string{
		{"-n", h2.Name, "addr", "add", off4.String() + "/32", "dev", h2.Link},
		{"-n", h2.Name, "addr", "add", off6.String() + "/128", "dev", h2.Link, "nodad"},
		{"-n", h1.Name, "route", "add", "198.18.7.0/24", "via", h2.IPv4.Addr().String()},
		{"-n", h1.Name, "route", "add", "fd00:77::/64", "via", h2.IPv6.Addr().String()},
	} {
		if out, err := exec.Command("ip", c...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(c, " "), err, out)
		}
	}
	self := Node{Name: "master-0", Role: Master, Addrs: []netip.Addr{h1.IPv4.Addr(), h1.IPv6.Addr()}}
	local, _ := runLocal(t, h1, &MDNS{Cluster: "c1", Self: self, Interface: h1.Link})
	local.waitFor(t, 0, 5*time.Second, "master-0 reports itself", hasNode(self))

	legacy := func(src netip.Addr, to netip.Addr, wait time.Duration) []byte {
		q := new(dns.Msg)
		q.SetQuestion("master-0.local.", dns.TypeANY)
		q.RecursionDesired = false
		b, err := q.Pack()
		if err != nil {
			t.Fatal(err)
		}
		reply, err := sendFrom(h2, src, 0, netip.AddrPortFrom(to, mdnsPort), b, wait)
		if err != nil {
			t.Fatal(err)
		}
		return reply
	}
	// master-0 answers once it has probed and announced (about a second).
	for i := 0; legacy(h2.IPv4.Addr(), h1.IPv4.Addr(), 500*time.Millisecond) == nil; i++ {
		if i == 10 {
			t.Fatal("master-0 answers no legacy query from on-link within 5 s")
		}
	}
	for _, fam := range []struct {
		off, on, to netip.Addr
		evil, good  string
		fake        netip.Addr
	}{
		{off: off4, on: h2.IPv4.Addr(), to: h1.IPv4.Addr(), evil: "evil4", good: "good4", fake: netip.MustParseAddr("198.18.0.66")},
		{off: off6, on: h2.IPv6.Addr(), to: h1.IPv6.Addr(), evil: "evil6", good: "good6", fake: netip.MustParseAddr("fd00:bb::66")},
	} {
		if r := legacy(fam.off, fam.to, 2*time.Second); r != nil {
			t.Errorf("a legacy query from off-link %v to %v was answered: %d bytes", fam.off, fam.to, len(r))
		}
		if r := legacy(fam.on, fam.to, 2*time.Second); r == nil {
			t.Errorf("a legacy query from on-link %v to %v got no answer (the test's query is wrong?)", fam.on, fam.to)
		}
		mark := local.mark()
		if _, err := sendFrom(h2, fam.off, mdnsPort, netip.AddrPortFrom(fam.to, mdnsPort), fakeNodeResponse(t, fam.evil, fam.fake), 0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		if _, err := sendFrom(h2, fam.on, mdnsPort, netip.AddrPortFrom(fam.to, mdnsPort), fakeNodeResponse(t, fam.good, fam.fake), 0); err != nil {
			t.Fatal(err)
		}
		local.waitFor(t, mark, 5*time.Second, fam.good+" (sent from on-link "+fam.on.String()+") is reported",
			hasNode(Node{Name: fam.good, Role: Master, Addrs: []netip.Addr{fam.fake}}))
		local.mu.Lock()
		for _, r := range local.hist[mark:] {
			if slices.ContainsFunc(r.nodes, func(n Node) bool { return n.Name == fam.evil }) {
				t.Errorf("a response sent to %v from off-link %v put %s into the nodes: %v", fam.to, fam.off, fam.evil, summary(r.nodes))
				break
			}
		}
		local.mu.Unlock()
	}
	if t.Failed() {
		out, _ := exec.Command("ip", "-n", h1.Name, "route").CombinedOutput()
		fmt.Fprintf(os.Stderr, "h1 routes:\n%s", out)
	}
}

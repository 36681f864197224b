package dns

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
)

func TestListenAddrs(t *testing.T) {
	udpTCP := []string{"udp", "tcp"}
	tests := []struct {
		name     string
		corefile string
		want     []listenAt
	}{
		{
			name:     "no bind: the wildcard",
			corefile: ".:53 {\n    forward . 198.18.0.1\n}\n",
			want:     []listenAt{{addr: ":53", networks: udpTCP, where: `Corefile:1: server block ".:53"`}},
		},
		{
			name:     "default port",
			corefile: "example.org {\n    bind 198.18.0.10\n}\n",
			want:     []listenAt{{addr: "198.18.0.10:53", networks: udpTCP, where: `Corefile:1: server block "example.org" (its bind, line 2)`}},
		},
		{
			name:     "single block without braces",
			corefile: "\n\n.:1053\nbind 198.18.0.10 fd00::10\n",
			want: []listenAt{
				{addr: "198.18.0.10:1053", networks: udpTCP, where: `Corefile:3: server block ".:1053" (its bind, line 4)`},
				{addr: "[fd00::10]:1053", networks: udpTCP, where: `Corefile:3: server block ".:1053" (its bind, line 4)`},
			},
		},
		{
			name: "blocks sharing an address are listed once, keys on two ports twice",
			corefile: "example.org:1053 {\n    bind 198.18.0.10\n}\n" +
				".:1053 {\n    bind 198.18.0.10 198.18.0.11 {\n        except 198.18.0.11\n    }\n}\n" +
				"a.example:1054 b.example:1055 {\n    forward . 198.18.0.1 {\n        policy sequential\n    }\n}\n",
			want: []listenAt{
				{addr: "198.18.0.10:1053", networks: udpTCP, where: `Corefile:1: server block "example.org:1053" (its bind, line 2)`},
				{addr: ":1054", networks: udpTCP, where: `Corefile:9: server block "a.example:1054 b.example:1055"`},
				{addr: ":1055", networks: udpTCP, where: `Corefile:9: server block "a.example:1054 b.example:1055"`},
			},
		},
		{
			name:     "bind 0.0.0.0 and :: stay as written (Go listens dual-stack on both)",
			corefile: ".:53 {\n    bind 0.0.0.0 ::\n}\n",
			want: []listenAt{
				{addr: "0.0.0.0:53", networks: udpTCP, where: `Corefile:1: server block ".:53" (its bind, line 2)`},
				{addr: "[::]:53", networks: udpTCP, where: `Corefile:1: server block ".:53" (its bind, line 2)`},
			},
		},
		{
			name: "other transports: TCP or UDP only, their default ports; unix sockets have none",
			corefile: "tls://.:8853 {\n    tls cert.pem key.pem\n}\ndns://.:5353 {\n}\nhttps://. {\n    bind 198.18.0.10\n}\n" +
				"grpc://.:9053 {\n}\nquic://. {\n}\nhttps3://.:8443 {\n}\ntls://example.org {\n}\nunix:///run/dns.sock {\n}\n" +
				"dns://.:8853 {\n}\n",
			want: []listenAt{
				{addr: ":8853", networks: []string{"tcp"}, where: `Corefile:1: server block "tls://.:8853"`},
				{addr: ":5353", networks: udpTCP, where: `Corefile:4: server block "dns://.:5353"`},
				{addr: "198.18.0.10:443", networks: []string{"tcp"}, where: `Corefile:6: server block "https://." (its bind, line 7)`},
				{addr: ":9053", networks: []string{"tcp"}, where: `Corefile:9: server block "grpc://.:9053"`},
				{addr: ":853", networks: []string{"udp"}, where: `Corefile:11: server block "quic://."`},
				{addr: ":8443", networks: []string{"udp"}, where: `Corefile:13: server block "https3://.:8443"`},
				{addr: ":853", networks: []string{"tcp"}, where: `Corefile:15: server block "tls://example.org"`},
				// tls:// took TCP on 8853; a plain DNS block there adds UDP.
				{addr: ":8853", networks: []string{"udp"}, where: `Corefile:19: server block "dns://.:8853"`},
			},
		},
		{
			name:     "a bind that does not parse is left to the bind plugin",
			corefile: ".:53 {\n    bind 198.18.0.300\n}\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := listenAddrs(Corefile{Contents: []byte(tt.corefile)})
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(listenAt{})); diff != "" {
				t.Errorf("listenAddrs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOverlaps(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{a: "198.18.0.10:53", b: "198.18.0.10:53", want: true},
		{a: "198.18.0.10:53", b: "198.18.0.11:53", want: false},
		{a: "198.18.0.10:53", b: "198.18.0.10:54", want: false},
		{a: "127.0.0.53:53", b: "198.18.0.10:53", want: false}, // systemd-resolved beside a bind
		{a: "[::]:53", b: "127.0.0.53:53", want: true},         // Go's wildcard is dual-stack
		{a: "0.0.0.0:53", b: "[fd00::10]:53", want: true},
		{a: "[::ffff:198.18.0.10]:53", b: "198.18.0.10:53", want: true},
		{a: "[fd00::10]:53", b: "198.18.0.10:53", want: false},
		{a: "[fe80::1%eth0]:53", b: "[fe80::1]:53", want: true},
	}
	for _, tt := range tests {
		a, b := netip.MustParseAddrPort(tt.a), netip.MustParseAddrPort(tt.b)
		if got := overlaps(a, b); got != tt.want {
			t.Errorf("overlaps(%s, %s) = %v, want %v", a, b, got, tt.want)
		}
		if got := overlaps(b, a); got != tt.want {
			t.Errorf("overlaps(%s, %s) = %v, want %v", b, a, got, tt.want)
		}
	}
}

// shareListen opens a UDP or TCP socket on addr with SO_REUSEPORT, as
// CoreDNS (or another vipstack dns) does, and closes it when t ends.
func shareListen(t *testing.T, network, addr string) netip.AddrPort {
	t.Helper()
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
		}); err != nil {
			return err
		}
		return serr
	}}
	var a net.Addr
	if network == "udp" {
		pc, err := lc.ListenPacket(context.Background(), network, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pc.Close() })
		a = pc.LocalAddr()
	} else {
		ln, err := lc.Listen(context.Background(), network, addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		a = ln.Addr()
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		t.Fatal(err)
	}
	return ap
}

// TestStartRefusesSharedPort: a port another socket listens on with
// SO_REUSEPORT (a second vipstack dns, an older CoreDNS) is refused before
// CoreDNS binds beside it, over UDP or TCP, for a specific address and for
// the wildcard; a listener on another specific address of the same port
// (systemd-resolved's 127.0.0.53:53) is no conflict for a bind elsewhere.
// The root test TestRootPortHeldByAnother does the same with processes.
func TestStartRefusesSharedPort(t *testing.T) {
	inUse := func(network, host string) string {
		return regexp.QuoteMeta(network+" "+host+":") + `%[1]d: another process already listens on this address and port \(listen ` + network +
			` .*: bind: address already in use\); accepted: an address and port no other process listens on`
	}
	tests := []struct {
		name     string
		networks []string // the other sockets'
		other    string   // their address
		// corefile and want have %[1]d for the port.
		corefile string
		want     string // regexp; "" means Start succeeds
	}{
		{
			name: "same address over UDP", networks: []string{"udp"}, other: "127.0.0.1",
			corefile: "\n.:%[1]d {\n    bind 127.0.0.1\n}\n",
			want:     `^dns: start Corefile: Corefile:2: server block "\.:%[1]d" \(its bind, line 3\): ` + inUse("udp", "127.0.0.1"),
		},
		{
			name: "same address over TCP", networks: []string{"tcp"}, other: "127.0.0.1",
			corefile: ".:%[1]d {\n    bind 127.0.0.1\n}\n",
			want:     `^dns: start Corefile: Corefile:1: server block "\.:%[1]d" \(its bind, line 2\): ` + inUse("tcp", "127.0.0.1"),
		},
		{
			name: "wildcard over another's specific address", networks: []string{"udp"}, other: "127.0.0.2",
			corefile: ".:%[1]d {\n}\n",
			want:     `server block "\.:%[1]d": udp :%[1]d \(every address, IPv4 and IPv6\): another process already listens`,
		},
		{
			name: "specific address under another's wildcard", networks: []string{"tcp"}, other: "",
			corefile: "example.org:%[1]d {\n    bind 127.0.0.1\n}\n",
			want:     `server block "example\.org:%[1]d" \(its bind, line 2\): ` + inUse("tcp", "127.0.0.1"),
		},
		{
			name: "another specific address is no conflict", networks: []string{"udp", "tcp"}, other: "127.0.0.2",
			corefile: ".:%[1]d {\n    bind 127.0.0.1\n}\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			port := freePort(t)
			for _, n := range tt.networks {
				shareListen(t, n, net.JoinHostPort(tt.other, fmt.Sprint(port)))
			}
			cf := Corefile{Contents: fmt.Appendf(nil, tt.corefile, port)}
			err := srv.Start(cf)
			if err == nil {
				defer srv.Stop()
			}
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Start: %v", err)
				}
				return
			}
			want := fmt.Sprintf(tt.want, port)
			if err == nil {
				t.Fatalf("Start succeeded beside %v sockets on %s port %d (listening on %v), want an error matching %q", tt.networks, tt.other, port, srv.Addrs(), want)
			}
			if !regexp.MustCompile(want).MatchString(err.Error()) {
				t.Errorf("Start: error %q does not match %q", err, want)
			}
			if a := srv.Addrs(); len(a) != 0 {
				t.Errorf("listening on %v after a refused Start", a)
			}
		})
	}
}

// freePort returns a port no socket listens on right now, at any address,
// for UDP and TCP.
func freePort(t *testing.T) int {
	t.Helper()
	for range 20 {
		pc, err := net.ListenPacket("udp", ":0")
		if err != nil {
			t.Fatal(err)
		}
		port := pc.LocalAddr().(*net.UDPAddr).Port
		ln, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
		pc.Close()
		if err == nil {
			ln.Close()
			return port
		}
	}
	t.Fatal("no port free for both UDP and TCP")
	return 0
}

// reloadFailures reads coredns_reload_failed_total.
func reloadFailures(t *testing.T) float64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "coredns_reload_failed_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// TestReloadPorts: a reload (the reload plugin) that keeps its port, here
// widening bind 127.0.0.1 to every address, applies (the check does not
// take the running Corefile's own listener for another process's); one
// that adds a block on a port another socket listens on with SO_REUSEPORT
// is refused, and the running Corefile keeps answering. It waits for
// CoreDNS's reload timer, so -short skips it.
func TestReloadPorts(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the reload plugin's timer")
	}
	port := freePort(t)
	block := func(bind, api string) string {
		return fmt.Sprintf(".:%d {\n%s    reload 2s 1s\n    clusterdns managed.example.com {\n        api %s\n    }\n}\n", port, bind, api)
	}
	_, write := startEditable(t, block("    bind 127.0.0.1\n", "198.18.0.5"))
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitAnswer := func(want string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			_, answer, _ := query(t, addr, "api.managed.example.com", dns.TypeA)
			if slices.Equal(answer, []string{"api.managed.example.com. A " + want}) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("answer still %q 15s after the Corefile changed, want %s", answer, want)
			}
			time.Sleep(100 * time.Millisecond) // polling CoreDNS's reload timer, which we cannot drive
		}
	}
	waitAnswer("198.18.0.5")

	// The same port on every address: the reload plugin applies it.
	write(block("", "198.18.0.6"))
	waitAnswer("198.18.0.6")

	// A second block on a port another socket shares: refused.
	other := shareListen(t, "udp", "127.0.0.1:0")
	failed := reloadFailures(t)
	write(block("", "198.18.0.7") + fmt.Sprintf("example.org:%d {\n    bind 127.0.0.1\n}\n", other.Port()))
	deadline := time.Now().Add(15 * time.Second)
	for reloadFailures(t) == failed {
		if time.Now().After(deadline) {
			t.Fatalf("no failed reload 15s after adding a block on %s, which another socket holds; listening on %v", other, srv.Addrs())
		}
		time.Sleep(100 * time.Millisecond) // polling CoreDNS's reload timer, which we cannot drive
	}
	waitAnswer("198.18.0.6")
	for _, a := range srv.Addrs() {
		if strings.HasSuffix(a.String(), fmt.Sprintf(":%d", other.Port())) {
			t.Errorf("listening on %s beside the other socket after a refused reload", a)
		}
	}
}

package lb

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/lb/relay"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

func TestBoundOverlaps(t *testing.T) {
	at := func(s string, dual bool) boundAddr { return boundAddr{ap: netip.MustParseAddrPort(s), dual: dual} }
	tests := []struct {
		name string
		a, b boundAddr
		want bool
	}{
		{name: "same address", a: at("198.18.0.1:9445", false), b: at("198.18.0.1:9445", false), want: true},
		{name: "another address, same port", a: at("198.18.0.1:9445", false), b: at("198.18.0.2:9445", false), want: false},
		{name: "same address, another port", a: at("198.18.0.1:9445", false), b: at("198.18.0.1:9446", false), want: false},
		{name: "IPv4 wildcard over an IPv4 address", a: at("0.0.0.0:9445", false), b: at("198.18.0.2:9445", false), want: true},
		{name: "IPv4 wildcard and an IPv6 address", a: at("0.0.0.0:9445", false), b: at("[fd00::1]:9445", false), want: false},
		{name: "IPv6 wildcard over an IPv6 address", a: at("[::]:9445", false), b: at("[fd00::1]:9445", false), want: true},
		{name: ":::9445 v4v6 over an IPv4 address", a: at("[::]:9445", true), b: at("198.18.0.2:9445", false), want: true},
		{name: ":::9445 v4v6 and the IPv4 wildcard", a: at("[::]:9445", true), b: at("0.0.0.0:9445", false), want: true},
		{name: "IPv6-only wildcard and an IPv4 address", a: at("[::]:9445", false), b: at("127.0.0.1:9445", false), want: false},
		{name: "IPv6 address and an IPv4 address", a: at("[fd00::1]:9445", false), b: at("198.18.0.1:9445", false), want: false},
		{name: "IPv6 zones", a: at("[fe80::1%eth0]:9445", false), b: at("[fe80::1]:9445", false), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.overlaps(tt.b); got != tt.want {
				t.Errorf("%v.overlaps(%v) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
			if got := tt.b.overlaps(tt.a); got != tt.want {
				t.Errorf("%v.overlaps(%v) = %v, want %v", tt.b, tt.a, got, tt.want)
			}
		})
	}
}

func TestBoundOf(t *testing.T) {
	p := netip.MustParseAddrPort
	tests := []struct {
		name string
		bind lbconfig.Bind
		want boundAddr
	}{
		{name: "IPv4", bind: lbconfig.Bind{Addr: p("198.18.0.1:9445")}, want: boundAddr{ap: p("198.18.0.1:9445")}},
		{name: "IPv4-mapped", bind: lbconfig.Bind{Addr: p("[::ffff:198.18.0.1]:9445")}, want: boundAddr{ap: p("198.18.0.1:9445")}},
		{name: "v4v6", bind: lbconfig.Bind{Addr: p("[::]:9445"), V4V6: true}, want: boundAddr{ap: p("[::]:9445"), dual: true}},
		{name: "IPv6 wildcard: the kernel's default", bind: lbconfig.Bind{Addr: p("[::]:9445")}, want: boundAddr{ap: p("[::]:9445"), dual: relay.SystemV6Only() == 0}},
		{name: "IPv6 address", bind: lbconfig.Bind{Addr: p("[fd00::1]:9445"), V4V6: true}, want: boundAddr{ap: p("[fd00::1]:9445")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := boundOf(tt.bind, nil); got != tt.want {
				t.Errorf("boundOf(%+v) = %+v, want %+v", tt.bind, got, tt.want)
			}
		})
	}
}

// TestApplyPortOfAnotherAddress: the LB listens on 127.0.0.1:P; a new bind
// on 127.0.0.2:P, where another socket listens with SO_REUSEPORT (haproxy
// would), is refused: the check compares addresses, not only ports (it
// took P for the LB's own and bound beside the other). Widening the LB's
// own 127.0.0.1:P to 0.0.0.0:P still applies. TestRootApplyPortByAddress
// does the same on a namespace's addresses.
func TestApplyPortOfAnotherAddress(t *testing.T) {
	a := startBackend(t, "a")
	first := tcpConfig(lbconfig.RoundRobin, srv("a", a))
	first.Frontends[0].Binds = []lbconfig.Bind{widenableBind(t)}
	l := newLB(t, fakeClock(), first)
	port := addrPort(t, l.Addrs("fe")[0]).Port()
	other, err := (&net.ListenConfig{Control: relay.ListenControl(-1)}).Listen(context.Background(), "tcp4", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), port).String())
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2:%d: %v", port, err)
	}
	defer other.Close()

	cfg := tcpConfig(lbconfig.RoundRobin, srv("a", a))
	cfg.Frontends[0].Binds = []lbconfig.Bind{{Addr: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)}}
	cfg.Monitors = []lbconfig.Monitor{{Name: "mon", Binds: []lbconfig.Bind{{Addr: addrPort(t, other.Addr())}}, URI: "/"}}
	err = l.Apply(cfg)
	want := "lb: apply: listen mon/bind 0: " + other.Addr().String() + ": listen tcp4 " + other.Addr().String() +
		": bind: address already in use: another socket listens on " + other.Addr().String()
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Apply with a monitor on %s, where another socket listens: got %v, want %q...", other.Addr(), err, want)
	}

	cfg = tcpConfig(lbconfig.RoundRobin, srv("a", a))
	cfg.Frontends[0].Binds = []lbconfig.Bind{{Addr: netip.AddrPortFrom(netip.IPv4Unspecified(), port)}}
	other.Close()
	if err := l.Apply(cfg); err != nil {
		t.Fatalf("Apply widening the LB's own 127.0.0.1:%d to 0.0.0.0:%d: %v", port, port, err)
	}
}

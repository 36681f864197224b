package lb

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/lb/relay"
	"github.com/vipstack/vipstack/internal/lbconfig"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestRootApplyPortByAddress runs the LB in a namespace with two IPv4
// addresses and an IPv6 one. It listens on 198.18.0.11:9445; haproxy (a
// socket with SO_REUSEPORT) listens on 198.18.0.111:9445:
//
//   - a new bind on 198.18.0.111:9445 is refused, naming it (the check
//     compared ports only, took 9445 for the LB's own and bound beside
//     haproxy, which then took a share of the clients);
//   - a new bind on [fd00:bb::11]:9445 applies: nobody listens there;
//   - a monitor on 198.18.0.11:9446 beside the LB's own `:::9446 v4v6`
//     applies: the dual-stack wildcard is the LB's, not another's.
func TestRootApplyPortByAddress(t *testing.T) {
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vsAl"})
	h := topo.Hosts[0]
	if out, err := h.Run("ip", "addr", "add", "198.18.0.111/24", "dev", h.Link); err != nil {
		t.Fatalf("ip addr add: %v: %s", err, out)
	}
	own, haproxy, v6 := h.IPv4.Addr(), netip.MustParseAddr("198.18.0.111"), h.IPv6.Addr()
	bind := func(a netip.Addr, port uint16) lbconfig.Bind { return lbconfig.Bind{Addr: netip.AddrPortFrom(a, port)} }
	config := func(binds ...lbconfig.Bind) *lbconfig.Config {
		cfg := tcpConfig(lbconfig.RoundRobin, lbconfig.Server{Name: "a", Addr: netip.AddrPortFrom(own, 6443), Weight: 1})
		cfg.Frontends[0].Binds = binds
		return cfg
	}

	l, err := New(Options{Clock: fakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		l.Shutdown(ctx)
	})
	var other net.Listener
	err = h.Do(func() error {
		if err := l.Apply(config(bind(own, 9445))); err != nil {
			return fmt.Errorf("first Apply: %w", err)
		}
		var err error
		other, err = (&net.ListenConfig{Control: relay.ListenControl(-1)}).Listen(context.Background(), "tcp4", netip.AddrPortFrom(haproxy, 9445).String())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	tests := []struct {
		name string
		cfg  *lbconfig.Config
		want string // error prefix; "" applies
	}{
		{
			name: "haproxy's address and port",
			cfg:  config(bind(own, 9445), bind(haproxy, 9445)),
			want: "lb: apply: frontend fe/bind 1: 198.18.0.111:9445: listen tcp4 198.18.0.111:9445: bind: address already in use: another socket listens on 198.18.0.111:9445 (accepted: an address and port no other process listens on",
		},
		{name: "the port on a free address", cfg: config(bind(own, 9445), bind(v6, 9445))},
		{name: "the LB's own dual-stack wildcard", cfg: func() *lbconfig.Config {
			c := config(lbconfig.Bind{Addr: netip.AddrPortFrom(netip.IPv6Unspecified(), 9446), V4V6: true})
			c.Monitors = []lbconfig.Monitor{{Name: "mon", Binds: []lbconfig.Bind{bind(own, 9446)}, URI: "/"}}
			return c
		}()},
	}
	for _, tt := range tests {
		var err error
		if derr := h.Do(func() error { err = l.Apply(tt.cfg); return nil }); derr != nil {
			t.Fatal(derr)
		}
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: Apply: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
			t.Errorf("%s: Apply: got %v, want %q...", tt.name, err, tt.want)
		}
	}
}

package lb

import (
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestUsable is a step table of what the kernel data path reads: after
// each runtime change, the servers that take new connections with their
// weights, and that OnServers was called.
func TestUsable(t *testing.T) {
	addr := func(port uint16) netip.AddrPort { return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port) }
	cfg := tcpConfig(lbconfig.RoundRobin,
		lbconfig.Server{Name: "a", Addr: addr(1), Weight: 1},
		lbconfig.Server{Name: "b", Addr: addr(2), Weight: 2},
		lbconfig.Server{Name: "k", Addr: addr(3), Weight: 1, Backup: true},
	)
	var calls atomic.Int64
	l := newLBOpts(t, Options{Clock: fakeClock(), OnServers: func() { calls.Add(1) }}, cfg)
	steps := []struct {
		name   string
		change func() error
		want   []UsableServer
	}{
		{name: "applied", change: func() error { return nil },
			want: []UsableServer{{"a", addr(1), 1}, {"b", addr(2), 2}}},
		{name: "b weight 5", change: func() error { return l.SetServerWeight("be", "b", 5) },
			want: []UsableServer{{"a", addr(1), 1}, {"b", addr(2), 5}}},
		{name: "a drain", change: func() error { return l.SetServerAdmin("be", "a", stats.AdminDrain) },
			want: []UsableServer{{"b", addr(2), 5}}},
		{name: "b maint: the backup takes over", change: func() error { return l.SetServerAdmin("be", "b", stats.AdminMaint) },
			want: []UsableServer{{"k", addr(3), 1}}},
		{name: "a ready again", change: func() error { return l.SetServerAdmin("be", "a", stats.AdminReady) },
			want: []UsableServer{{"a", addr(1), 1}}},
	}
	for _, st := range steps {
		before := calls.Load()
		if err := st.change(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if diff := cmp.Diff(st.want, l.Usable("be"), cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); diff != "" {
			t.Errorf("%s: Usable (-want +got):\n%s", st.name, diff)
		}
		if st.name != "applied" && calls.Load() == before {
			t.Errorf("%s: OnServers not called", st.name)
		}
	}
	if got := l.Usable("nosuch"); got != nil {
		t.Errorf("Usable of an unknown backend: %v, want none", got)
	}
}

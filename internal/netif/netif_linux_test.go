package netif

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vipstack/vipstack/internal/testnet"
)

// waitLimit bounds every wait for a kernel event; it is never asserted.
const waitLimit = 20 * time.Second

func setup(t *testing.T) (*testnet.Host, *Handle) {
	t.Helper()
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vsC"})
	h := topo.Hosts[0]
	var nh *Handle
	if err := h.Do(func() (err error) { nh, err = Open(); return err }); err != nil {
		t.Fatalf("Open in %s: %v", h.Name, err)
	}
	t.Cleanup(nh.Close)
	return h, nh
}

// addrLine returns the `ip -o addr` line of addr on eth0, or "".
func addrLine(t *testing.T, h *testnet.Host, addr netip.Addr) string {
	t.Helper()
	out, err := h.Run("ip", "-o", "addr", "show", "dev", h.Link)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " "+addr.String()+"/") {
			return l
		}
	}
	return ""
}

func TestAddDelVIP(t *testing.T) {
	h, nh := setup(t)
	// DAD on, so an IPv6 VIP added without NODAD would show "tentative".
	if _, err := h.Run("sysctl", "-qw", "net.ipv6.conf.eth0.accept_dad=1"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		vip       VIP
		wantWords []string // in the `ip -o addr` line while held
		notWords  []string
	}{
		{name: "ipv4 label",
			vip:       VIP{Prefix: netip.MustParsePrefix("198.18.0.100/32"), Dev: "eth0", Label: "eth0:vip"},
			wantWords: []string{"inet 198.18.0.100/32 ", "scope global eth0:vip"}, notWords: []string{"brd"}},
		{name: "ipv4 label without the interface name (OpenShift's label vip)",
			vip:       VIP{Prefix: netip.MustParsePrefix("198.18.3.100/32"), Dev: "eth0", Label: "vip"},
			wantWords: []string{"inet 198.18.3.100/32 ", "scope global vip"}},
		{name: "ipv4 broadcast scope link",
			vip: VIP{Prefix: netip.MustParsePrefix("198.18.1.100/24"), Dev: "eth0", Scope: "link",
				Broadcast: netip.MustParseAddr("198.18.1.255")},
			wantWords: []string{"inet 198.18.1.100/24 brd 198.18.1.255 scope link"}},
		{name: "ipv4 no prefix route",
			vip:       VIP{Prefix: netip.MustParsePrefix("198.18.2.100/24"), Dev: "eth0", NoPrefixRoute: true},
			wantWords: []string{"inet 198.18.2.100/24 ", "noprefixroute"}, notWords: []string{"brd"}},
		{name: "ipv6 like keepalived",
			vip:       VIP{Prefix: netip.MustParsePrefix("fd00:bb::100/128"), Dev: "eth0"},
			wantWords: []string{"inet6 fd00:bb::100/128 ", "nodad", "deprecated", "preferred_lft 0sec"},
			notWords:  []string{"tentative"}},
		{name: "ipv6 preferred no prefix route",
			vip:       VIP{Prefix: netip.MustParsePrefix("fd00:cc::100/64"), Dev: "eth0", Preferred: true, NoPrefixRoute: true},
			wantWords: []string{"inet6 fd00:cc::100/64 ", "nodad", "noprefixroute", "preferred_lft forever"},
			notWords:  []string{"tentative", "deprecated"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.vip.Prefix.Addr()
			for i := 0; i < 2; i++ { // the second add is a no-op
				if err := nh.AddVIP(tt.vip); err != nil {
					t.Fatalf("AddVIP #%d: %v", i+1, err)
				}
			}
			line := addrLine(t, h, a)
			for _, w := range tt.wantWords {
				if !strings.Contains(line, w) {
					t.Errorf("ip addr line %q lacks %q", line, w)
				}
			}
			for _, w := range tt.notWords {
				if strings.Contains(line, w) {
					t.Errorf("ip addr line %q has %q", line, w)
				}
			}
			if tt.vip.NoPrefixRoute {
				out, err := h.Run("ip", "route", "show", tt.vip.Prefix.Masked().String())
				if err != nil || strings.TrimSpace(out) != "" {
					t.Errorf("route for %s with noprefixroute: %q, %v; want none", tt.vip.Prefix.Masked(), out, err)
				}
			}
			has, err := nh.HasVIP(tt.vip)
			if err != nil || !has {
				t.Errorf("HasVIP after add = %v, %v; want true", has, err)
			}
			other := tt.vip
			other.Prefix = netip.PrefixFrom(a, tt.vip.Prefix.Bits()-1)
			if has, err := nh.HasVIP(other); err != nil || has {
				t.Errorf("HasVIP(%s) with another length = %v, %v; want false", other.Prefix, has, err)
			}
			for i := 0; i < 2; i++ { // the second delete is a no-op
				if err := nh.DelVIP(tt.vip); err != nil {
					t.Fatalf("DelVIP #%d: %v", i+1, err)
				}
			}
			if line := addrLine(t, h, a); line != "" {
				t.Errorf("after DelVIP, ip addr still shows %q", line)
			}
			if has, err := nh.HasVIP(tt.vip); err != nil || has {
				t.Errorf("HasVIP after delete = %v, %v; want false", has, err)
			}
		})
	}
}

func TestVIPErrors(t *testing.T) {
	_, nh := setup(t)
	p := netip.MustParsePrefix("198.18.0.100/32")
	if err := nh.AddVIP(VIP{Prefix: p, Dev: "eth0", Label: "eth0:much-too-long"}); err == nil || !strings.Contains(err.Error(), "VIP.Label") {
		t.Errorf("AddVIP with a bad label = %v; want a VIP.Label error", err)
	}
	if err := nh.AddVIP(VIP{Prefix: p, Dev: "nosuch0"}); err == nil || !strings.Contains(err.Error(), "nosuch0") {
		t.Errorf("AddVIP on a missing link = %v; want an error naming it", err)
	}
	if err := nh.DelVIP(VIP{Prefix: p, Dev: "nosuch0"}); err != nil {
		t.Errorf("DelVIP on a missing link = %v; want nil", err)
	}
	if has, err := nh.HasVIP(VIP{Prefix: p, Dev: "nosuch0"}); err != nil || has {
		t.Errorf("HasVIP on a missing link = %v, %v; want false, nil", has, err)
	}
}

func TestLink(t *testing.T) {
	h, nh := setup(t)
	var ifi *net.Interface
	if err := h.Do(func() (err error) { ifi, err = net.InterfaceByName("eth0"); return err }); err != nil {
		t.Fatal(err)
	}
	got, err := nh.Link("eth0")
	if err != nil {
		t.Fatal(err)
	}
	want := LinkInfo{Name: "eth0", Index: ifi.Index, Up: true, MAC: ifi.HardwareAddr, MTU: 1500}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Link (-want +got):\n%s", diff)
	}
	if got.MAC.String() != h.MAC {
		t.Errorf("Link MAC = %s, ip link says %s", got.MAC, h.MAC)
	}
	if _, err := nh.Link("nosuch0"); err == nil {
		t.Errorf("Link(nosuch0) succeeded")
	}
}

func TestPrimaryIPv4(t *testing.T) {
	h, nh := setup(t)
	own := h.IPv4.Addr()
	vip := VIP{Prefix: netip.MustParsePrefix("198.18.0.100/32"), Dev: "eth0"}
	if err := nh.AddVIP(vip); err != nil {
		t.Fatal(err)
	}
	va := vip.Prefix.Addr()
	check := func(step string, exclude []netip.Addr, want netip.Addr) {
		t.Helper()
		got, err := nh.PrimaryIPv4("eth0", exclude)
		if err != nil {
			t.Fatalf("%s: PrimaryIPv4(exclude %v): %v", step, exclude, err)
		}
		if got != want {
			t.Errorf("%s: PrimaryIPv4(exclude %v) = %s, want %s", step, exclude, got, want)
		}
	}
	check("own address first", []netip.Addr{va}, own)
	check("own address first", nil, own)
	check("own address excluded", []netip.Addr{own}, va)

	// Re-adding the host's address puts the VIP first in the kernel's list:
	// now the VIP must be skipped.
	for _, args := range [][]string{
		{"addr", "del", h.IPv4.String(), "dev", "eth0"},
		{"addr", "add", h.IPv4.String(), "dev", "eth0"},
	} {
		if _, err := h.Run("ip", args...); err != nil {
			t.Fatal(err)
		}
	}
	out, err := h.Run("ip", "-o", "-4", "addr", "show", "dev", "eth0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.SplitN(out, "\n", 2)[0], va.String()+"/") {
		t.Fatalf("precondition: the VIP should be listed first:\n%s", out)
	}
	check("VIP first", []netip.Addr{va}, own)
	check("VIP first, nothing excluded", nil, va)

	_, err = nh.PrimaryIPv4("eth0", []netip.Addr{va, own})
	if !errors.Is(err, ErrNoAddress) {
		t.Errorf("PrimaryIPv4 with everything excluded = %v; want ErrNoAddress", err)
	}
}

func TestLinkLocalIPv6(t *testing.T) {
	h, nh := setup(t)
	got, err := nh.LinkLocalIPv6("eth0")
	if err != nil {
		t.Fatal(err)
	}
	if want := h.LinkLocal.WithZone("eth0"); got != want {
		t.Errorf("LinkLocalIPv6 = %s, want %s", got, want)
	}
}

// stopWatch cancels a watch and checks that it returns nil within
// waitLimit.
func stopWatch(t *testing.T, what string, cancel context.CancelFunc, ret <-chan error) {
	t.Helper()
	cancel()
	select {
	case err := <-ret:
		if err != nil {
			t.Errorf("%s returned %v after cancel; want nil", what, err)
		}
	case <-time.After(waitLimit):
		t.Errorf("%s did not return within %v of cancel", what, waitLimit)
	}
}

type linkEvent struct {
	Name string
	Up   bool
}

func TestWatchLinks(t *testing.T) {
	h, nh := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan linkEvent, 100)
	ret := make(chan error, 1)
	go func() {
		ret <- nh.WatchLinks(ctx, func(name string, up bool) { events <- linkEvent{name, up} })
	}()
	defer stopWatch(t, "WatchLinks", cancel, ret)
	next := func() linkEvent {
		t.Helper()
		for {
			select {
			case e := <-events:
				if e.Name == "eth0" || e.Name == "vx0" {
					return e
				}
			case err := <-ret:
				t.Fatalf("WatchLinks returned early: %v", err)
			case <-time.After(waitLimit):
				t.Fatalf("no link event within %v", waitLimit)
			}
		}
	}
	if diff := cmp.Diff(linkEvent{"eth0", true}, next()); diff != "" {
		t.Fatalf("initial report (-want +got):\n%s", diff)
	}
	steps := []struct {
		name string
		do   func() error
		want linkEvent
	}{
		{name: "ip link set eth0 down", do: func() error { return h.SetLink(false) }, want: linkEvent{"eth0", false}},
		{name: "ip link set eth0 up", do: func() error { return h.SetLink(true) }, want: linkEvent{"eth0", true}},
		{name: "switch port down (carrier lost)", do: func() error { return h.Cut(true) }, want: linkEvent{"eth0", false}},
		{name: "switch port up", do: func() error { return h.Cut(false) }, want: linkEvent{"eth0", true}},
		{name: "new link (down)", do: func() error {
			_, err := h.Run("ip", "link", "add", "vx0", "type", "veth", "peer", "name", "vx1")
			return err
		}, want: linkEvent{"vx0", false}},
		{name: "new link up", do: func() error {
			if _, err := h.Run("ip", "link", "set", "vx1", "up"); err != nil {
				return err
			}
			_, err := h.Run("ip", "link", "set", "vx0", "up")
			return err
		}, want: linkEvent{"vx0", true}},
		{name: "link deleted", do: func() error {
			_, err := h.Run("ip", "link", "del", "vx0")
			return err
		}, want: linkEvent{"vx0", false}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := next(); got != s.want {
			t.Fatalf("%s: event %v, want %v", s.name, got, s.want)
		}
	}
}

func TestSweep(t *testing.T) {
	h, nh := setup(t)
	l := Ledger{Path: filepath.Join(t.TempDir(), "vips")}
	held := []VIP{
		{Prefix: netip.MustParsePrefix("198.18.0.100/32"), Dev: "eth0", Label: "eth0:vip"},
		{Prefix: netip.MustParsePrefix("fd00:bb::100/128"), Dev: "eth0"},
	}
	notHeld := []VIP{
		{Prefix: netip.MustParsePrefix("198.18.0.101/32"), Dev: "eth0"},
		{Prefix: netip.MustParsePrefix("198.18.0.102/32"), Dev: "gone0"},
	}
	if err := l.Save(append(append([]VIP(nil), held...), notHeld...)); err != nil {
		t.Fatal(err)
	}
	for _, v := range held {
		if err := nh.AddVIP(v); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := nh.Sweep(l)
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if diff := cmp.Diff(held, removed, addrCmp...); diff != "" {
		t.Errorf("Sweep removed (-want +got):\n%s", diff)
	}
	for _, v := range held {
		if line := addrLine(t, h, v.Prefix.Addr()); line != "" {
			t.Errorf("after Sweep, ip addr still shows %q", line)
		}
	}
	if _, err := h.Run("ip", "-4", "addr", "show", "dev", "eth0"); err != nil {
		t.Fatal(err)
	}
	if has, _ := h.HasAddr(h.IPv4.Addr()); !has {
		t.Errorf("Sweep removed the host's own address %s", h.IPv4.Addr())
	}
	left, err := l.Load()
	if err != nil || len(left) != 0 {
		t.Errorf("ledger after Sweep = %v, %v; want empty", left, err)
	}
	removed, err = nh.Sweep(l)
	if err != nil || len(removed) != 0 {
		t.Errorf("second Sweep = %v, %v; want nothing", removed, err)
	}
}

// TestSweepExcept: the kept entries stay on the interface and in the
// ledger; the others are removed as Sweep removes them.
func TestSweepExcept(t *testing.T) {
	h, nh := setup(t)
	l := Ledger{Path: filepath.Join(t.TempDir(), "vips")}
	keep := VIP{Prefix: netip.MustParsePrefix("198.18.0.100/32"), Dev: "eth0"}
	drop := VIP{Prefix: netip.MustParsePrefix("198.18.0.101/32"), Dev: "eth0"}
	if err := l.Save([]VIP{keep, drop}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []VIP{keep, drop} {
		if err := nh.AddVIP(v); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := nh.SweepExcept(l, func(v VIP) bool { return v.Prefix == keep.Prefix })
	if err != nil {
		t.Fatalf("SweepExcept: %v", err)
	}
	if diff := cmp.Diff([]VIP{drop}, removed, addrCmp...); diff != "" {
		t.Errorf("SweepExcept removed (-want +got):\n%s", diff)
	}
	if line := addrLine(t, h, keep.Prefix.Addr()); line == "" {
		t.Errorf("SweepExcept removed the kept %s", keep.Prefix)
	}
	if line := addrLine(t, h, drop.Prefix.Addr()); line != "" {
		t.Errorf("after SweepExcept, ip addr still shows %q", line)
	}
	left, err := l.Load()
	if diff := cmp.Diff([]VIP{keep}, left, addrCmp...); err != nil || diff != "" {
		t.Errorf("ledger after SweepExcept (-want +got, err %v):\n%s", err, diff)
	}
}

// TestPresent: Present answers as HasVIP does for each VIP, from one dump:
// the address with its length on its interface; another length, another
// interface or a missing interface is not present.
func TestPresent(t *testing.T) {
	h, nh := setup(t)
	for _, c := range [][]string{
		{"ip", "addr", "add", "198.18.0.100/32", "dev", h.Link},
		{"ip", "addr", "add", "198.18.0.101/24", "dev", h.Link},
		{"ip", "addr", "add", "fd00:bb::100/128", "dev", h.Link, "nodad"},
		{"ip", "addr", "add", "198.18.0.102/32", "dev", "lo"},
	} {
		if out, err := h.Run(c[0], c[1:]...); err != nil {
			t.Fatalf("%v: %v: %s", c, err, out)
		}
	}
	vip := func(s, dev string) VIP { return VIP{Prefix: netip.MustParsePrefix(s), Dev: dev} }
	vips := []VIP{
		vip("198.18.0.100/32", h.Link),
		vip("198.18.0.101/32", h.Link), // configured as /24
		vip("fd00:bb::100/128", h.Link),
		vip("198.18.0.102/32", h.Link), // on lo
		vip("198.18.0.102/32", "lo"),
		vip("198.18.0.103/32", h.Link),
		vip("198.18.0.100/32", "nosuch0"),
	}
	got, err := nh.Present(vips)
	if err != nil {
		t.Fatal(err)
	}
	want := []bool{true, false, true, false, true, false, false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Present (-want +got):\n%s", diff)
	}
	for i, v := range vips {
		has, err := nh.HasVIP(v)
		if err != nil {
			t.Fatal(err)
		}
		if has != got[i] {
			t.Errorf("%s: HasVIP %v, Present %v", v, has, got[i])
		}
	}
	if _, err := nh.Present([]VIP{{Prefix: netip.MustParsePrefix("198.18.0.1/32")}}); err == nil || !strings.Contains(err.Error(), "VIP.Dev") {
		t.Errorf("a VIP without Dev: err %v, want one naming VIP.Dev", err)
	}
}

type addrEvent struct {
	Prefix netip.Prefix
	Added  bool
}

func TestWatchAddrs(t *testing.T) {
	h, nh := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan addrEvent, 100)
	ret := make(chan error, 1)
	go func() {
		ret <- nh.WatchAddrs(ctx, func(p netip.Prefix, added bool) { events <- addrEvent{p, added} })
	}()
	defer stopWatch(t, "WatchAddrs", cancel, ret)
	v4 := netip.MustParsePrefix("198.18.7.1/24")
	v6 := netip.MustParsePrefix("fd00:bb::7:1/64")
	next := func() addrEvent {
		t.Helper()
		for {
			select {
			case e := <-events:
				if e.Prefix == v4 || e.Prefix == v6 || !e.Prefix.IsValid() {
					return e
				}
			case err := <-ret:
				t.Fatalf("WatchAddrs returned early: %v", err)
			case <-time.After(waitLimit):
				t.Fatalf("no address event within %v", waitLimit)
			}
		}
	}
	ip := func(args ...string) error {
		_, err := h.Run("ip", args...)
		return err
	}
	// The first report, once subscribed, says anything may have changed
	// before it.
	if got := next(); got != (addrEvent{}) {
		t.Fatalf("first event %v, want the zero Prefix (subscribed)", got)
	}
	steps := []struct {
		name string
		do   func() error
		want addrEvent
	}{
		{name: "IPv4 added", do: func() error { return ip("addr", "add", v4.String(), "dev", h.Link) }, want: addrEvent{v4, true}},
		{name: "IPv6 added", do: func() error { return ip("addr", "add", v6.String(), "dev", h.Link, "nodad") }, want: addrEvent{v6, true}},
		{name: "IPv4 deleted", do: func() error { return ip("addr", "del", v4.String(), "dev", h.Link) }, want: addrEvent{v4, false}},
		{name: "IPv6 deleted", do: func() error { return ip("addr", "del", v6.String(), "dev", h.Link) }, want: addrEvent{v6, false}},
		{name: "IPv4 added again", do: func() error { return ip("addr", "add", v4.String(), "dev", h.Link) }, want: addrEvent{v4, true}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := next(); got != s.want {
			t.Fatalf("%s: event %v, want %v", s.name, got, s.want)
		}
	}
}

// TestWatchAddrsOverflow: events the kernel drops because the watch's
// socket is full (ENOBUFS) make WatchAddrs subscribe again and report the
// zero Prefix ("anything may have changed"), then the events after.
func TestWatchAddrsOverflow(t *testing.T) {
	h, nh := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan addrEvent, 100)
	hold := make(chan struct{})
	ret := make(chan error, 1)
	go func() {
		held := false
		ret <- nh.WatchAddrs(ctx, func(p netip.Prefix, added bool) {
			if p.IsValid() && !held {
				held = true
				<-hold // the socket fills meanwhile
			}
			select {
			case events <- addrEvent{p, added}:
			case <-ctx.Done():
			}
		})
	}()
	defer stopWatch(t, "WatchAddrs", cancel, ret)
	next := func() addrEvent {
		t.Helper()
		select {
		case e := <-events:
			return e
		case err := <-ret:
			t.Fatalf("WatchAddrs returned early: %v", err)
		case <-time.After(waitLimit):
			t.Fatalf("no address event within %v", waitLimit)
		}
		return addrEvent{}
	}
	if got := next(); got != (addrEvent{}) {
		t.Fatalf("first event %v, want the zero Prefix (subscribed)", got)
	}
	// Far more events than a socket buffer within rmem_max holds.
	const n = 8000
	var batch strings.Builder
	for i := range n {
		batch.WriteString("addr add 198.19." + strconv.Itoa(i/250) + "." + strconv.Itoa(i%250+1) + "/32 dev " + h.Link + "\n")
	}
	file := filepath.Join(t.TempDir(), "batch")
	if err := os.WriteFile(file, []byte(batch.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Run("ip", "-batch", file); err != nil {
		t.Fatal(err)
	}
	close(hold)
	got := 0
	for {
		e := next()
		if !e.Prefix.IsValid() {
			break // subscribed again
		}
		if got++; got >= n {
			t.Fatalf("all %d events came through, and no new subscription: the socket did not overflow", n)
		}
	}
	last := netip.MustParsePrefix("198.18.9.9/32")
	if _, err := h.Run("ip", "addr", "add", last.String(), "dev", h.Link); err != nil {
		t.Fatal(err)
	}
	for {
		e := next()
		if e == (addrEvent{last, true}) {
			break
		}
	}
}

// TestResubscribe drives the resubscription loop with scripted
// subscriptions: a subscription that delivered resets the count of quiet
// failures, and the loop gives up after maxQuietFailures quiet failures in
// a row.
func TestResubscribe(t *testing.T) {
	boom := errors.New("boom")
	type result struct {
		delivered bool
		err       error
	}
	tests := []struct {
		name      string
		script    []result
		wantCalls int
		wantErr   bool
	}{
		{
			name:      "quiet failures give up",
			script:    []result{{false, boom}, {false, boom}, {false, boom}},
			wantCalls: 3,
			wantErr:   true,
		},
		{
			name:      "a delivering subscription resets the count",
			script:    []result{{false, boom}, {false, boom}, {true, boom}, {false, boom}, {false, boom}, {false, boom}},
			wantCalls: 6,
			wantErr:   true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := resubscribe(context.Background(), "things", func() (bool, error) {
				if calls == len(tc.script) {
					t.Fatalf("subscription %d not in the script", calls+1)
				}
				r := tc.script[calls]
				calls++
				return r.delivered, r.err
			})
			if calls != tc.wantCalls {
				t.Errorf("subscriptions %d, want %d", calls, tc.wantCalls)
			}
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, boom)) {
				t.Errorf("err = %v, want wrapped boom: %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "watch things") {
				t.Errorf("err = %q, want it to name what is watched", err)
			}
		})
	}
	t.Run("cancel returns nil", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		err := resubscribe(ctx, "things", func() (bool, error) {
			calls++
			cancel()
			return false, boom
		})
		if err != nil || calls != 1 {
			t.Errorf("after cancel: err %v after %d subscriptions; want nil after 1", err, calls)
		}
	})
}

package engine

import (
	"context"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/track"
	"github.com/vipstack/vipstack/internal/vrrp"
)

// engineWith builds an engine whose tracked inputs are set by hand, to test
// the priority arithmetic without sockets or netlink.
func engineWith(scripts map[string]*keepalived.Script, status map[string]bool, links map[string]bool) *Engine {
	e := &Engine{cfg: &keepalived.Config{Scripts: scripts}, trackers: map[string]*trackerEntry{}, links: links, log: slog.New(slog.DiscardHandler)}
	for name, ok := range status {
		e.trackers[name] = &trackerEntry{spec: scripts[name], status: track.Status{Name: name, OK: ok}}
	}
	return e
}

func TestEffectivePriority(t *testing.T) {
	scripts := map[string]*keepalived.Script{
		"lb":      {Name: "lb", Weight: 20},
		"both":    {Name: "both", Weight: 5},
		"drop":    {Name: "drop", Weight: -30},
		"must":    {Name: "must", Weight: 0},
		"reverse": {Name: "reverse", Weight: 10, WeightReverse: true},
	}
	for _, tc := range []struct {
		name      string
		base      uint8
		track     []keepalived.TrackScript
		ifaces    []keepalived.TrackInterface
		status    map[string]bool
		pending   []string // scripts whose first result has not come (OK, as the tracker has them)
		links     map[string]bool
		wantPrio  uint8
		wantFault string
	}{{
		name:     "seed 000 master with both checks passing: 40+20+5",
		base:     40,
		track:    []keepalived.TrackScript{{Name: "lb"}, {Name: "both"}},
		status:   map[string]bool{"lb": true, "both": true},
		wantPrio: 65,
	}, {
		name:     "seed 000 master with only the local API: 40+5",
		base:     40,
		track:    []keepalived.TrackScript{{Name: "lb"}, {Name: "both"}},
		status:   map[string]bool{"lb": false, "both": true},
		wantPrio: 45,
	}, {
		name:     "negative weight applies while failing",
		base:     100,
		track:    []keepalived.TrackScript{{Name: "drop"}},
		status:   map[string]bool{"drop": false},
		wantPrio: 70,
	}, {
		name:     "per-instance weight overrides the script's",
		base:     100,
		track:    []keepalived.TrackScript{{Name: "drop", Weight: -90, HasWeight: true}},
		status:   map[string]bool{"drop": false},
		wantPrio: 10,
	}, {
		name:     "clamped at 1",
		base:     20,
		track:    []keepalived.TrackScript{{Name: "drop"}},
		status:   map[string]bool{"drop": false},
		wantPrio: 1,
	}, {
		name:     "clamped at 254",
		base:     250,
		track:    []keepalived.TrackScript{{Name: "lb"}},
		status:   map[string]bool{"lb": true},
		wantPrio: 254,
	}, {
		name:     "the owner keeps 255",
		base:     255,
		track:    []keepalived.TrackScript{{Name: "drop"}},
		status:   map[string]bool{"drop": false},
		wantPrio: 255,
	}, {
		name:      "weight 0 failing means fault",
		base:      100,
		track:     []keepalived.TrackScript{{Name: "must"}},
		status:    map[string]bool{"must": false},
		wantPrio:  100,
		wantFault: "script must failing",
	}, {
		name:     "reverse flips the sign: a positive weight is taken off while succeeding",
		base:     100,
		track:    []keepalived.TrackScript{{Name: "reverse"}},
		status:   map[string]bool{"reverse": true},
		wantPrio: 100,
	}, {
		name:     "reverse while failing",
		base:     100,
		track:    []keepalived.TrackScript{{Name: "reverse"}},
		status:   map[string]bool{"reverse": false},
		wantPrio: 90,
	}, {
		// keepalived 2.2.7 (measured): "Changing effective priority from
		// 100 to 130" only once the script succeeded; a -30 instance
		// advertised 100 meanwhile; weight 0 kept its instance in FAULT.
		name:     "scripts without a first result count for nothing, whichever the sign",
		base:     40,
		track:    []keepalived.TrackScript{{Name: "lb"}, {Name: "both"}, {Name: "drop"}},
		status:   map[string]bool{"lb": true, "both": true, "drop": true},
		pending:  []string{"lb", "drop"},
		wantPrio: 45,
	}, {
		name:      "weight 0 without a first result means fault",
		base:      100,
		track:     []keepalived.TrackScript{{Name: "must"}},
		status:    map[string]bool{"must": true},
		pending:   []string{"must"},
		wantPrio:  100,
		wantFault: "script must failing",
	}, {
		name:      "own interface down means fault",
		base:      100,
		links:     map[string]bool{"eth0": false},
		wantPrio:  100,
		wantFault: "interface eth0 failing",
	}, {
		name:     "tracked interface with a weight",
		base:     100,
		ifaces:   []keepalived.TrackInterface{{Name: "eth1", Weight: -50}, {Name: "eth2", Weight: 7}},
		links:    map[string]bool{"eth1": false, "eth2": true},
		wantPrio: 57,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			links := map[string]bool{"eth0": true}
			for k, v := range tc.links {
				links[k] = v
			}
			e := engineWith(scripts, tc.status, links)
			for _, name := range tc.pending {
				e.trackers[name].status.Pending = true
			}
			in := &instance{cfg: &keepalived.Instance{Name: "VI_1", Interface: "eth0", Priority: tc.base, TrackScripts: tc.track, TrackInterfaces: tc.ifaces}}
			prio, fault := e.effective(in)
			if prio != tc.wantPrio || fault != tc.wantFault {
				t.Fatalf("effective = %d %q, want %d %q\ncontributions: %s", prio, fault, tc.wantPrio, tc.wantFault, describe(e.contributions(in)))
			}
		})
	}
}

func TestMismatch(t *testing.T) {
	a := netip.MustParseAddr
	v2 := &keepalived.Instance{Name: "VI_1", Version: 2, VRID: 51, AdvertInterval: 1e9, AuthType: "PASS", AuthPass: "managed_api_vip",
		VIPs: []keepalived.VIP{{Prefix: netip.MustParsePrefix("198.18.0.100/32")}}, ExcludedVIPs: []keepalived.VIP{{Prefix: netip.MustParsePrefix("198.18.0.101/32")}}}
	in := &instance{cfg: v2, auth: vrrp.Password(v2.AuthPass)}
	good := vrrp.Advertisement{Version: 2, VRID: 51, Priority: 100, Interval: 1e9, AuthType: vrrp.AuthSimple, AuthData: vrrp.Password("managed_"), Addresses: []netip.Addr{a("198.18.0.100")}}
	for _, tc := range []struct {
		name   string
		change func(*vrrp.Advertisement)
		want   string
	}{
		{name: "matching (password truncated to 8 as keepalived sends it)", change: func(*vrrp.Advertisement) {}, want: ""},
		{name: "version", change: func(p *vrrp.Advertisement) { p.Version = 3 }, want: "version"},
		{name: "no auth", change: func(p *vrrp.Advertisement) { p.AuthType, p.AuthData = 0, [8]byte{} }, want: "auth"},
		{name: "wrong password", change: func(p *vrrp.Advertisement) { p.AuthData = vrrp.Password("other") }, want: "auth"},
		{name: "interval", change: func(p *vrrp.Advertisement) { p.Interval = 2e9 }, want: "interval"},
		{name: "addresses", change: func(p *vrrp.Advertisement) { p.Addresses = []netip.Addr{a("198.18.0.101")} }, want: "addresses"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := good
			tc.change(&p)
			kind, _ := (&Engine{}).mismatch(in, &p)
			if diff := cmp.Diff(tc.want, kind); diff != "" {
				t.Fatalf("mismatch kind (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKeepsState(t *testing.T) {
	a, p := netip.MustParseAddr, netip.MustParsePrefix
	base := keepalived.Instance{Name: "VI_1", VRID: 51, Priority: 100, Preempt: true,
		VIPs:         []keepalived.VIP{{Prefix: p("198.18.0.100/32")}},
		UnicastSrcIP: a("198.18.0.11"), UnicastPeers: []netip.Addr{a("198.18.0.12")}}
	change := func(f func(*keepalived.Instance)) keepalived.Instance {
		c := base
		f(&c)
		return c
	}
	for _, tc := range []struct {
		name string
		b    keepalived.Instance
		want bool
	}{
		{name: "unchanged", b: base, want: true},
		{name: "a peer added", b: change(func(c *keepalived.Instance) {
			c.UnicastPeers = []netip.Addr{a("198.18.0.12"), a("198.18.0.13")}
		}), want: true},
		{name: "an address added", b: change(func(c *keepalived.Instance) {
			c.VIPs = append([]keepalived.VIP{{Prefix: p("198.18.0.101/32")}}, c.VIPs...)
		}), want: true},
		{name: "all addresses gone (an IPv4 instance keeps running)", b: change(func(c *keepalived.Instance) { c.VIPs = nil }), want: true},
		{name: "priority changed", b: change(func(c *keepalived.Instance) { c.Priority = 90 }), want: true},
		{name: "priority, addresses and peers changed", b: change(func(c *keepalived.Instance) {
			c.Priority, c.VIPs, c.UnicastPeers = 110, nil, []netip.Addr{a("198.18.0.13")}
		}), want: true},
		{name: "tracked scripts changed", b: change(func(c *keepalived.Instance) {
			c.TrackScripts = []keepalived.TrackScript{{Name: "chk", Weight: 20, HasWeight: true}}
		}), want: true},
		{name: "notify changed", b: change(func(c *keepalived.Instance) { c.Notify = &keepalived.Notify{Master: "/bin/true"} }), want: true},
		{name: "initial state changed", b: change(func(c *keepalived.Instance) { c.InitialState = "MASTER" }), want: true},
		{name: "becomes the address owner", b: change(func(c *keepalived.Instance) { c.Priority = 255 }), want: false},
		{name: "nopreempt", b: change(func(c *keepalived.Instance) { c.Preempt = false }), want: true},
		{name: "preempt_delay", b: change(func(c *keepalived.Instance) { c.PreemptDelay = 5 * time.Second }), want: true},
		{name: "another VRID", b: change(func(c *keepalived.Instance) { c.VRID = 52 }), want: false},
		{name: "another interval", b: change(func(c *keepalived.Instance) { c.AdvertInterval = time.Second }), want: true},
		{name: "another version (keepalived 2.2.7 keeps its master)", b: change(func(c *keepalived.Instance) { c.Version = 3 }), want: true},
		{name: "authentication added (keepalived 2.2.7 keeps its master)", b: change(func(c *keepalived.Instance) {
			c.AuthType, c.AuthPass = "PASS", "secret1"
		}), want: true},
		{name: "another interface", b: change(func(c *keepalived.Instance) { c.Interface = "eth1" }), want: false},
		{name: "unicast to multicast", b: change(func(c *keepalived.Instance) { c.UnicastPeers = nil }), want: false},
		{name: "another family", b: change(func(c *keepalived.Instance) {
			c.VIPs = []keepalived.VIP{{Prefix: p("fd00::100/128")}}
		}), want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := keepsState(&base, &tc.b); got != tc.want {
				t.Errorf("keepsState = %v, want %v", got, tc.want)
			}
			if got := keepsState(&tc.b, &base); got != tc.want {
				t.Errorf("the other way: keepsState = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMissingInterfaces(t *testing.T) {
	p := netip.MustParsePrefix
	at := func(line int) keepalived.Pos { return keepalived.Pos{File: "k.conf", Line: line} }
	exists := func(name string) bool { return name == "ens3" }
	for _, tc := range []struct {
		name string
		in   keepalived.Instance
		want []string
	}{
		{name: "all present", in: keepalived.Instance{Name: "VI_1", Pos: at(1), Interface: "ens3",
			VIPs: []keepalived.VIP{vipAt(p("198.18.0.5/32"), "", at(5))}}},
		{name: "instance interface missing", in: keepalived.Instance{Name: "VI_1", Pos: at(1), Interface: "ens9"},
			want: []string{`k.conf:1: interface "ens9" (interface of vrrp_instance VI_1) does not exist here; ` +
				"keepalived -t refuses the file, and vipstack runs the instance in FAULT until it appears"}},
		{name: "VIP dev and tracked interface missing, each named once",
			in: keepalived.Instance{Name: "VI_1", Pos: at(1), Interface: "ens3",
				VIPs:            []keepalived.VIP{vipAt(p("198.18.0.5/32"), "ens4", at(5)), vipAt(p("198.18.0.6/32"), "ens4", at(6))},
				TrackInterfaces: []keepalived.TrackInterface{{Name: "bond1", Pos: at(9)}}},
			want: []string{
				`k.conf:5: interface "ens4" (dev of 198.18.0.5/32) does not exist here; ` +
					"keepalived -t refuses the file, and vipstack cannot add the address",
				`k.conf:9: interface "bond1" (track_interface of vrrp_instance VI_1) does not exist here; ` +
					"keepalived -t refuses the file, and vipstack counts it down",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := MissingInterfaces(&keepalived.Config{Instances: []*keepalived.Instance{&tc.in}}, exists)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("MissingInterfaces (-want +got):\n%s", diff)
			}
		})
	}
}

// blockingProbe never finishes before its context is done: the trackers it
// runs in show the state they started in.
type blockingProbe struct{}

func (blockingProbe) Probe(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestRedefinedScriptKeepsItsState: a reload that changes a vrrp_script
// (here its weight, -30 to -20) starts its new tracker in the old one's
// state, as keepalived 2.2.7 does ("VRRP_Script(chk) considered
// unsuccessful on reload"; its master went from priority 70 straight to 80,
// never advertising 100). vipstack started it afresh, passing until its
// first result: the instance was back at 100 meanwhile, and a backup held
// below its master by the failing check preempted it.
func TestRedefinedScriptKeepsItsState(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old      track.Status
		wantOK   bool
		wantPrio uint8
	}{{
		name:     "failing stays failing",
		old:      track.Status{Name: "chk", OK: false, Reason: "exit status 1"},
		wantOK:   false,
		wantPrio: 80,
	}, {
		name:     "passing stays passing",
		old:      track.Status{Name: "chk", OK: true},
		wantOK:   true,
		wantPrio: 100,
	}, {
		name:     "no result yet starts afresh (passing until the first result)",
		old:      track.Status{Name: "chk", OK: true, Pending: true},
		wantOK:   true,
		wantPrio: 100,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			oldSpec := &keepalived.Script{Name: "chk", Weight: -30, Rise: 2, Fall: 2, Probe: blockingProbe{}}
			newSpec := *oldSpec
			newSpec.Weight = -20
			vi := &keepalived.Instance{Name: "VI_1", Interface: "eth0", Priority: 100, TrackScripts: []keepalived.TrackScript{{Name: "chk"}}}
			cfg := &keepalived.Config{Scripts: map[string]*keepalived.Script{"chk": &newSpec}, Instances: []*keepalived.Instance{vi}}
			e := &Engine{
				ctx: ctx, clk: clock.NewFake(time.Unix(0, 0)), log: slog.New(slog.DiscardHandler),
				cfg:      cfg,
				links:    map[string]bool{"eth0": true},
				trackers: map[string]*trackerEntry{"chk": {spec: oldSpec, cancel: func() {}, status: tc.old}},
			}
			e.syncTrackers(cfg)
			te := e.trackers["chk"]
			if te == nil || te.spec != &newSpec {
				t.Fatalf("tracker for chk not replaced by the new definition: %+v", te)
			}
			if te.status.OK != tc.wantOK || te.status.Pending != tc.old.Pending {
				t.Errorf("new tracker starts with OK=%v pending=%v, want OK=%v pending=%v", te.status.OK, te.status.Pending, tc.wantOK, tc.old.Pending)
			}
			if prio, _ := e.effective(&instance{cfg: vi}); prio != tc.wantPrio {
				t.Errorf("effective priority after the reload = %d, want %d\ncontributions: %s", prio, tc.wantPrio, describe(e.contributions(&instance{cfg: vi})))
			}
		})
	}
}

// TestMissingInterfaceIsAFault: an instance built without its interface
// (see build) is in FAULT even with dont_track_primary, which only ignores
// the interface going down: there is nothing to send on.
func TestMissingInterfaceIsAFault(t *testing.T) {
	for _, dontTrack := range []bool{false, true} {
		e := engineWith(nil, nil, map[string]bool{"eth5": false})
		in := &instance{cfg: &keepalived.Instance{Name: "VI_1", Interface: "eth5", Priority: 100, DontTrackPrimary: dontTrack}}
		e.setCond(in, condAbsent, true, "interface eth5 does not exist")
		if _, fault := e.effective(in); fault != "interface eth5 failing" {
			t.Errorf("dont_track_primary %v: fault %q, want %q", dontTrack, fault, "interface eth5 failing")
		}
	}
}

// vipAt is the configuration's VIP of p on dev, written at pos.
func vipAt(p netip.Prefix, dev string, pos keepalived.Pos) keepalived.VIP {
	v := keepalived.MakeVIP(p, keepalived.VIPOptions{Dev: dev})
	v.SetPos(pos)
	return v
}

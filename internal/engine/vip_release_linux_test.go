package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// The tests here run the engine in this process, in network namespaces,
// so that a hook (Options.hooks) can act at a point of its work.

const releaseVIP = "198.18.0.100"

// lowEngine is the engine of a test's low-priority node (priority 100,
// releaseConf) with hooks, its own ledger and a log that the test prints
// if it fails.
func lowEngine(t *testing.T, hooks *testHooks) (*Engine, *syncbuf.Buffer) {
	t.Helper()
	log := new(syncbuf.Buffer)
	e, _, err := New(Options{
		ConfigPath: releaseConf(t, 100),
		Logger:     slog.New(slog.NewTextHandler(log, nil)),
		Ledger:     netif.Ledger{Path: filepath.Join(t.TempDir(), "low.vips")},
		hooks:      hooks,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("low node's log:\n%s", log.String())
		}
	})
	return e, log
}

// releaseConf is a one-instance keepalived.conf for the VIP above.
func releaseConf(t *testing.T, prio int) string {
	t.Helper()
	text := fmt.Sprintf(`global_defs {
    router_id r%d
    vrrp_version 3
}
vrrp_instance VI_1 {
    state BACKUP
    interface eth0
    virtual_router_id 61
    priority %d
    advert_int 0.1
    virtual_ipaddress {
        %s/32
    }
}
`, prio, prio, releaseVIP)
	path := filepath.Join(t.TempDir(), "keepalived.conf")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runIn runs e in h's network namespace until the test ends.
func runIn(t *testing.T, h *testnet.Host, e *Engine) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Do(func() error { return e.Run(ctx) }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("engine in %s: %v", h.Name, err)
		}
	})
}

// waitFor polls cond every 20 ms for at most waitLimit; the bound is never
// asserted, it only ends a test that would otherwise hang.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, func() error {
		if ok, why := cond(); !ok {
			return fmt.Errorf("%s: not so: %s", what, why)
		}
		return nil
	})
}

func stateOf(e *Engine) string {
	for _, s := range e.Status() {
		if s.Name == "VI_1" {
			return s.State
		}
	}
	return "(none)"
}

// TestVIPReleaseLostRemove: a node that takes the VIP and steps down when a
// higher-priority router starts must not keep it, even when an add of the
// VIP lands right after the engine removed it (the hook re-adds it as a
// late add would: an address left behind that way is what a VIP on three
// nodes at the demo's start looked like). Once the engine reports BACKUP,
// the kernel must not hold the VIP, and the log says it was removed again.
// Without the watch of released VIPs the address stays for good.
func TestVIPReleaseLostRemove(t *testing.T) {
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vsr"})
	low, high := topo.Hosts[0], topo.Hosts[1]
	vip := netip.MustParseAddr(releaseVIP)

	readded := make(chan error, 1)
	lowE, lowLog := lowEngine(t, &testHooks{removed: func(v netif.VIP) {
		// The late add, once: it lands after the removal returned.
		select {
		case readded <- nil:
			if _, err := low.Run("ip", "addr", "add", v.Prefix.String(), "dev", v.Dev); err != nil {
				t.Errorf("hook: re-adding %s: %v", v.Prefix, err)
			}
		default:
		}
	}})
	runIn(t, low, lowE)
	waitFor(t, "the low node takes the VIP", func() (bool, string) {
		has, err := low.HasAddr(vip)
		return err == nil && has && stateOf(lowE) == "MASTER", fmt.Sprintf("state %s, holds %v (%v)", stateOf(lowE), has, err)
	})

	highE, _, err := New(Options{
		ConfigPath: releaseConf(t, 200),
		Logger:     slog.New(slog.DiscardHandler),
		Ledger:     netif.Ledger{Path: filepath.Join(t.TempDir(), "high.vips")},
	})
	if err != nil {
		t.Fatal(err)
	}
	runIn(t, high, highE)
	waitFor(t, "the low node steps down", func() (bool, string) {
		return stateOf(lowE) == "BACKUP", "state " + stateOf(lowE)
	})
	if len(readded) == 0 {
		t.Fatal("the hook never ran: the low node did not remove the VIP")
	}
	waitFor(t, "the VIP is on the high node only", func() (bool, string) {
		hl, err1 := low.HasAddr(vip)
		hh, err2 := high.HasAddr(vip)
		return errors.Join(err1, err2) == nil && !hl && hh, fmt.Sprintf("low holds %v, high holds %v (%v %v)", hl, hh, err1, err2)
	})
	if got := lowLog.String(); !strings.Contains(got, "removed a VIP still on its interface after its instance let it go") {
		t.Errorf("the low node's log does not say it removed the VIP again")
	}
	if s := stateOf(lowE); s != "BACKUP" {
		t.Errorf("low node state %s, want BACKUP", s)
	}
}

// TestVIPReleaseWatch checks the watch of released VIPs step by step on
// the engine's clock, against the kernel: a released VIP found on the
// interface again is removed, for releaseWatch after its release (or its
// last removal); after that, an address another program adds is left
// alone, as keepalived 2.2.7 leaves it (measured, see releaseWatch); and
// the ledger lists a VIP for as long as it is watched.
func TestVIPReleaseWatch(t *testing.T) {
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vsr"})
	h := topo.Hosts[0]
	var nl *netif.Handle
	if err := h.Do(func() (err error) { nl, err = netif.Open(); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nl.Close)
	var log syncbuf.Buffer
	ledger := netif.Ledger{Path: filepath.Join(t.TempDir(), "vips")}
	e := &Engine{nl: nl, log: slog.New(slog.NewTextHandler(&log, nil)), opts: Options{Ledger: ledger},
		held: map[string]netif.VIP{}, released: map[string]releasedVIP{}}
	v := netif.VIP{Prefix: netip.MustParsePrefix(releaseVIP + "/32"), Dev: h.Link}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	add := func() {
		if _, err := h.Run("ip", "addr", "add", v.Prefix.String(), "dev", h.Link); err != nil {
			t.Fatal(err)
		}
	}
	removals := func() int { return strings.Count(log.String(), "removed a VIP still on its interface") }
	steps := []struct {
		name        string
		at          time.Duration
		do          func(now time.Time)
		wantPresent bool
		wantRemoved int // removals logged so far
		wantWatched bool
		wantLedger  bool
		wantNext    time.Duration // releasedNext after t0; 0: none
	}{
		{name: "held", at: 0, do: func(time.Time) {
			add()
			e.held[addrKey(v.Prefix, v.Dev)] = v
			if err := e.opts.Ledger.Save(e.heldList()); err != nil {
				t.Fatal(err)
			}
		}, wantPresent: true, wantLedger: true},
		{name: "released", at: 0, do: func(now time.Time) {
			e.release("VI_1", v, now)
			e.checkReleased(now)
		}, wantWatched: true, wantLedger: true, wantNext: releasePoll},
		{name: "back on the interface within the watch", at: releasePoll, do: func(now time.Time) {
			add()
			e.checkReleased(now)
		}, wantRemoved: 1, wantWatched: true, wantLedger: true, wantNext: 2 * releasePoll},
		{name: "absent, watch not over (it restarted at the removal)", at: releaseWatch, do: func(now time.Time) {
			e.checkReleased(now)
		}, wantRemoved: 1, wantWatched: true, wantLedger: true, wantNext: releaseWatch + releasePoll},
		{name: "absent for releaseWatch: watch over", at: releasePoll + releaseWatch, do: func(now time.Time) {
			e.checkReleased(now)
		}, wantRemoved: 1},
		{name: "another program adds it afterwards: left alone", at: 2*releasePoll + releaseWatch, do: func(now time.Time) {
			add()
			e.checkReleased(now)
		}, wantPresent: true, wantRemoved: 1},
		{name: "released again, then held by a master of ours before the check: left alone", at: 3*releasePoll + releaseWatch, do: func(now time.Time) {
			e.release("VI_1", v, now)
			add()
			e.held[addrKey(v.Prefix, v.Dev)] = v
			e.checkReleased(now)
		}, wantPresent: true, wantRemoved: 1},
	}
	for _, st := range steps {
		now := t0.Add(st.at)
		st.do(now)
		present, err := nl.HasVIP(v)
		if err != nil {
			t.Fatal(err)
		}
		inLedger, err := ledger.Load()
		if err != nil {
			t.Fatal(err)
		}
		var next time.Duration
		if !e.releasedNext.IsZero() {
			next = e.releasedNext.Sub(t0)
		}
		_, watched := e.released[addrKey(v.Prefix, v.Dev)]
		_, held := e.held[addrKey(v.Prefix, v.Dev)]
		type state struct {
			Present, Watched, InLedger bool
			Removed                    int
			Next                       time.Duration
		}
		want := state{Present: st.wantPresent, Watched: st.wantWatched, InLedger: st.wantLedger, Removed: st.wantRemoved, Next: st.wantNext}
		got := state{Present: present, Watched: watched, InLedger: len(inLedger) == 1, Removed: removals(), Next: next}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("step %q (held %v): (-want +got):\n%s\nlog:\n%s", st.name, held, diff, log.String())
		}
	}
}

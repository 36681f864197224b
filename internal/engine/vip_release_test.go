package engine

import (
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/syncbuf"
)

// The tests here run engines on the simulated segment (sim_test.go), in
// virtual time, so that a hook (Options.hooks) can act at a point of the
// engine's work.

const releaseVIP = "198.18.0.100"

// releaseConfText is a one-instance keepalived.conf for the VIP above.
func releaseConfText(prio int) string {
	return fmt.Sprintf(`global_defs {
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
}

// releaseConf writes releaseConfText to a file and returns its path.
func releaseConf(t *testing.T, prio int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keepalived.conf")
	if err := os.WriteFile(path, []byte(releaseConfText(prio)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func stateOf(e *Engine) string {
	for _, s := range e.Status() {
		if s.Name == "VI_1" {
			return s.State
		}
	}
	return "(none)"
}

// simWaitFor lets virtual time pass, 10 ms at a time, until cond holds,
// checking it whenever every engine is idle. It fails the test after 20 s
// of virtual time: a bound, never an assertion on how long it took.
func simWaitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		synctest.Wait()
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not so after 20 s of virtual time: %s", what, why)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestVIPReleaseLostRemove: a node that takes the VIP and steps down when a
// higher-priority router starts must not keep it, even when an add of the
// VIP lands right after the engine removed it (the hook re-adds it as a
// late add would: an address left behind that way is what a VIP on three
// nodes at the demo's start looked like). Once the engine reports BACKUP,
// the node must not hold the VIP, and the log says it was removed again.
// Without the watch of released VIPs the address stays for good.
func TestVIPReleaseLostRemove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seg := &simSegment{}
		low, high := seg.node("low", "198.18.0.1/24"), seg.node("high", "198.18.0.2/24")
		vip := netip.MustParseAddr(releaseVIP)

		readded := make(chan error, 1)
		lowE, lowLog := simEngine(t, low, releaseConfText(100), &testHooks{removed: func(v netif.VIP) {
			// The late add, once: it lands after the removal returned.
			select {
			case readded <- nil:
				low.addAddr(v.Dev, v.Prefix.String(), false)
			default:
			}
		}})
		simRun(t, lowE)
		simWaitFor(t, "the low node takes the VIP", func() (bool, string) {
			has := low.has(simLinkName, vip)
			return has && stateOf(lowE) == "MASTER", fmt.Sprintf("state %s, holds %v", stateOf(lowE), has)
		})

		highE, _ := simEngine(t, high, releaseConfText(200), nil)
		simRun(t, highE)
		simWaitFor(t, "the low node steps down", func() (bool, string) {
			return stateOf(lowE) == "BACKUP", "state " + stateOf(lowE)
		})
		if len(readded) == 0 {
			t.Fatal("the hook never ran: the low node did not remove the VIP")
		}
		simWaitFor(t, "the VIP is on the high node only", func() (bool, string) {
			hl, hh := low.has(simLinkName, vip), high.has(simLinkName, vip)
			return !hl && hh, fmt.Sprintf("low holds %v, high holds %v", hl, hh)
		})
		if got := lowLog.String(); !strings.Contains(got, "removed a VIP still on its interface after its instance let it go") {
			t.Errorf("the low node's log does not say it removed the VIP again")
		}
		if s := stateOf(lowE); s != "BACKUP" {
			t.Errorf("low node state %s, want BACKUP", s)
		}
	})
}

// TestVIPReleaseWatchFlaps: a node whose instance flaps between MASTER
// and BACKUP (a higher-priority router starts, then stops with its
// priority-0 advert, again and again, faster than the watch of released
// VIPs lasts) holds the VIP whenever it is master and never when it is
// backup: the watch, still running for the VIP of the last step-down, must
// not remove it from under the master it is again, and nothing re-adds it
// while it is backup, so the watch never has to remove it (no such line in
// the log). 6 cycles, each step waited for at most 20 s of virtual time.
func TestVIPReleaseWatchFlaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const cycles = 6
		seg := &simSegment{}
		low, high := seg.node("low", "198.18.0.1/24"), seg.node("high", "198.18.0.2/24")
		vip := netip.MustParseAddr(releaseVIP)

		lowE, lowLog := simEngine(t, low, releaseConfText(100), nil)
		simRun(t, lowE)
		holders := func() (bool, bool, string) {
			hl, hh := low.has(simLinkName, vip), high.has(simLinkName, vip)
			return hl, hh, fmt.Sprintf("low %s holds %v, high holds %v", stateOf(lowE), hl, hh)
		}
		lowMaster := func() (bool, string) {
			hl, hh, why := holders()
			return stateOf(lowE) == "MASTER" && hl && !hh, why
		}
		simWaitFor(t, "the low node takes the VIP", lowMaster)

		conf := releaseConf(t, 200)
		ledger := netif.Ledger{Path: filepath.Join(t.TempDir(), "high.vips")}
		for i := range cycles {
			highE, _, err := New(high.options(Options{ConfigPath: conf, Logger: slog.New(slog.DiscardHandler), Ledger: ledger}))
			if err != nil {
				t.Fatal(err)
			}
			stop := simRun(t, highE)
			simWaitFor(t, fmt.Sprintf("cycle %d: the low node steps down", i), func() (bool, string) {
				hl, hh, why := holders()
				return stateOf(lowE) == "BACKUP" && !hl && hh, why
			})
			stop()
			simWaitFor(t, fmt.Sprintf("cycle %d: the low node is master again", i), lowMaster)
		}
		// The last step-down's watch is still on (releaseWatch): past two
		// of its polls the master keeps its VIP.
		time.Sleep(2*releasePoll + releasePoll/2) // virtual time
		synctest.Wait()
		if ok, why := lowMaster(); !ok {
			t.Errorf("after the watch's polls: %s", why)
		}
		if n := strings.Count(lowLog.String(), "removed a VIP still on its interface"); n != 0 {
			t.Errorf("the watch removed the VIP %d times; nothing re-added it", n)
		}
	})
}

// TestVIPReleaseWatch checks the watch of released VIPs step by step on
// the engine's clock, against the node's addresses: a released VIP found on the
// interface again is removed, for releaseWatch after its release (or its
// last removal); after that, an address another program adds is left
// alone, as keepalived 2.2.7 leaves it (measured, see releaseWatch); and
// the ledger lists a VIP for as long as it is watched.
func TestVIPReleaseWatch(t *testing.T) {
	nl := (&simSegment{}).node("h", "198.18.0.1/24")
	var log syncbuf.Buffer
	ledger := netif.Ledger{Path: filepath.Join(t.TempDir(), "vips")}
	e := &Engine{nl: nl, log: slog.New(slog.NewTextHandler(&log, nil)), opts: Options{Ledger: ledger},
		released: map[string]releasedVIP{}, ledgerW: newLedgerWriter(ledger)}
	v := netif.VIP{Prefix: netip.MustParsePrefix(releaseVIP + "/32"), Dev: simLinkName}
	ref := refOf(v)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	add := func() {
		if nl.has(v.Dev, v.Prefix.Addr()) {
			t.Fatalf("adding %s: already there", v.Prefix)
		}
		nl.addAddr(v.Dev, v.Prefix.String(), false)
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
			e.held.put(&ref)
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
			e.held.put(&ref)
			e.checkReleased(now)
		}, wantPresent: true, wantRemoved: 1},
	}
	for _, st := range steps {
		now := t0.Add(st.at)
		st.do(now)
		// What Run's loop and background writer do between steps.
		e.handLedger()
		e.ledgerW.flush(func(err error) { t.Fatal(err) })
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
		held := e.held.has(v.Prefix, v.Dev)
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

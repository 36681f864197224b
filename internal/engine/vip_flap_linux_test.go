package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestVIPReleaseWatchFlaps: a node whose instance flaps between MASTER
// and BACKUP (a higher-priority router starts, then stops with its
// priority-0 advert, again and again, faster than the watch of released
// VIPs lasts) holds the VIP whenever it is master and never when it is
// backup: the watch, still running for the VIP of the last step-down, must
// not remove it from under the master it is again, and nothing re-adds it
// while it is backup, so the watch never has to remove it (no such line in
// the log). Bounded: 6 cycles, each step waited for at most 20 s.
func TestVIPReleaseWatchFlaps(t *testing.T) {
	testnet.RequireRoot(t)
	const cycles = 6
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vsu"})
	low, high := topo.Hosts[0], topo.Hosts[1]
	vip := netip.MustParseAddr(releaseVIP)

	lowE, lowLog := lowEngine(t, nil)
	runIn(t, low, lowE)
	holders := func() (bool, bool, string) {
		hl, err1 := low.HasAddr(vip)
		hh, err2 := high.HasAddr(vip)
		return hl, hh, fmt.Sprintf("low %s holds %v, high holds %v (%v)", stateOf(lowE), hl, hh, errors.Join(err1, err2))
	}
	lowMaster := func() (bool, string) {
		hl, hh, why := holders()
		return stateOf(lowE) == "MASTER" && hl && !hh, why
	}
	waitFor(t, "the low node takes the VIP", lowMaster)

	highConf := releaseConf(t, 200)
	ledger := netif.Ledger{Path: filepath.Join(t.TempDir(), "high.vips")}
	for i := range cycles {
		highE, _, err := New(Options{ConfigPath: highConf, Logger: slog.New(slog.DiscardHandler), Ledger: ledger})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- high.Do(func() error { return highE.Run(ctx) }) }()
		waitFor(t, fmt.Sprintf("cycle %d: the low node steps down", i), func() (bool, string) {
			hl, hh, why := holders()
			return stateOf(lowE) == "BACKUP" && !hl && hh, why
		})
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("cycle %d: high engine: %v", i, err)
		}
		waitFor(t, fmt.Sprintf("cycle %d: the low node is master again", i), lowMaster)
	}
	// The last step-down's watch is still on (releaseWatch): past two of
	// its polls the master keeps its VIP.
	time.Sleep(2*releasePoll + releasePoll/2) // the engine's own timer runs meanwhile: a bound, not an assertion
	if ok, why := lowMaster(); !ok {
		t.Errorf("after the watch's polls: %s", why)
	}
	if n := strings.Count(lowLog.String(), "removed a VIP still on its interface"); n != 0 {
		t.Errorf("the watch removed the VIP %d times; nothing re-added it", n)
	}
}

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
	"sync"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestHandoffKeepsMastership: an engine that hands over (Handoff) to a
// successor on its node that adopts its masters (Options.Adopt) keeps the
// VIP where it is: sampled every 5 ms from before the hand-off until a
// second after it, the VIP never leaves the node and keepalived, the
// backup beside it, never takes it, although the successor starts 100 ms
// after the predecessor stopped (a shutdown would have sent priority 0 and
// keepalived would take over within its skew time; a successor that
// started as backup would remove the VIP). The successor's own shutdown
// later still lets keepalived take over.
func TestHandoffKeepsMastership(t *testing.T) {
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vsho"})
	node, peer := topo.Hosts[0], topo.Hosts[1]
	vip := netip.MustParseAddr(releaseVIP)

	kaConf, err := os.ReadFile(releaseConf(t, 100))
	if err != nil {
		t.Fatal(err)
	}
	ka, err := peers.Start(peer, peers.Keepalived, string(kaConf), t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("keepalived's log:\n%s", ka.Log())
		}
	})

	ledger := netif.Ledger{Path: filepath.Join(t.TempDir(), "node.vips")}
	conf := releaseConf(t, 200)
	start := func(name string, adopt []string) (*Engine, *syncbuf.Buffer, context.CancelFunc, chan error) {
		log := new(syncbuf.Buffer)
		e, _, err := New(Options{ConfigPath: conf, Ledger: ledger, Adopt: adopt, AdoptFrom: "the test's first engine",
			Logger: slog.New(slog.NewTextHandler(log, nil))})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- node.Do(func() error { return e.Run(ctx) }) }()
		t.Cleanup(func() {
			cancel()
			<-done
			if t.Failed() {
				t.Logf("%s engine's log:\n%s", name, log.String())
			}
		})
		return e, log, cancel, done
	}

	first, _, _, firstDone := start("first", nil)
	waitFor(t, "the first engine holds the VIP", func() (bool, string) {
		on, err := node.HasAddr(vip)
		return err == nil && on && stateOf(first) == "MASTER", fmt.Sprintf("state %s, holds %v (%v)", stateOf(first), on, err)
	})
	// keepalived has heard us: it is BACKUP, not still in its start-up.
	waitFor(t, "keepalived is backup", func() (bool, string) {
		return strings.Contains(ka.Log(), "Entering BACKUP STATE"), "no \"Entering BACKUP STATE\" in its log yet"
	})

	// Sample both nodes until told to stop.
	var (
		mu                 sync.Mutex
		samples, off, dual int
	)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			on, err1 := node.HasAddr(vip)
			there, err2 := peer.HasAddr(vip)
			if errors.Join(err1, err2) != nil {
				continue
			}
			mu.Lock()
			samples++
			if !on {
				off++
			}
			if there {
				dual++
			}
			mu.Unlock()
		}
	}()

	masters, err := first.Handoff(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := <-firstDone; err != nil {
		t.Fatalf("the first engine's Run after the hand-off: %v", err)
	}
	firstDone <- nil // for its clean-up
	if len(masters) != 1 || masters[0] != "VI_1" {
		t.Fatalf("Handoff returned masters %v, want [VI_1]", masters)
	}
	if on, err := node.HasAddr(vip); err != nil || !on {
		t.Fatalf("after Handoff the VIP is not on the node (%v): the predecessor must leave it", err)
	}
	time.Sleep(100 * time.Millisecond) // the successor's start-up; under keepalived's master down interval (300 ms + skew)
	second, secondLog, stopSecond, _ := start("second", masters)
	waitFor(t, "the successor is master", func() (bool, string) {
		return stateOf(second) == "MASTER", "state " + stateOf(second)
	})
	time.Sleep(time.Second)
	close(stop)
	<-sampled
	mu.Lock()
	n, o, d := samples, off, dual
	mu.Unlock()
	if n < 20 {
		t.Fatalf("only %d samples: the test did not watch the hand-off", n)
	}
	if o > 0 || d > 0 {
		t.Errorf("during the hand-off the VIP was off the node in %d and on keepalived's node in %d of %d samples; want 0 and 0", o, d, n)
	}
	if got := ka.Log(); strings.Count(got, "Entering MASTER STATE") > 0 {
		t.Errorf("keepalived became master during the hand-off")
	}
	if !strings.Contains(secondLog.String(), "handed over by the test's first engine") {
		t.Errorf("the successor's log does not say it adopted its mastership")
	}
	left, err := ledger.Load()
	if err != nil || len(left) != 1 || left[0].Prefix.Addr() != vip {
		t.Errorf("the ledger after the hand-off lists %v (%v), want the VIP: a crash of the successor must remove it", left, err)
	}

	// The successor stops as any engine does: keepalived takes over.
	stopSecond()
	waitFor(t, "keepalived takes over after the successor stops", func() (bool, string) {
		on, err1 := node.HasAddr(vip)
		there, err2 := peer.HasAddr(vip)
		return errors.Join(err1, err2) == nil && !on && there, fmt.Sprintf("node holds %v, keepalived's node %v", on, there)
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

package engine

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/syncbuf"
)

// TestHandoffKeepsMastership: an engine that hands over (Handoff) to a
// successor on its node that adopts its masters (Options.Adopt) keeps the
// VIP where it is: sampled every 5 ms from before the hand-off until a
// second after it, the VIP never leaves the node and the backup beside it
// never takes it, although the successor starts 100 ms after the
// predecessor stopped (a shutdown would have sent priority 0 and the
// backup would take over within its skew time; a successor that started
// as backup would remove the VIP). The successor's own shutdown later
// still lets the backup take over. (In namespaces the backup was
// keepalived 2.2.7; here it is an engine at the same priority, 100, whose
// master-down interval, 300 ms and its skew, is the same.)
func TestHandoffKeepsMastership(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seg := &simSegment{}
		node, peer := seg.node("node", "198.18.0.1/24"), seg.node("peer", "198.18.0.2/24")
		vip := netip.MustParseAddr(releaseVIP)
		pe, peerLog := simEngine(t, peer, releaseConfText(100), nil)
		simRun(t, pe)

		ledger := netif.Ledger{Path: filepath.Join(t.TempDir(), "node.vips")}
		start := func(adopt []string) (*Engine, *syncbuf.Buffer, context.CancelFunc, chan error) {
			e, log := simEngine(t, node, releaseConfText(200), nil, func(o *Options) {
				o.Ledger, o.Adopt, o.AdoptFrom = ledger, adopt, "the test's first engine"
			})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- e.Run(ctx) }()
			t.Cleanup(func() {
				cancel()
				<-done
			})
			return e, log, cancel, done
		}

		first, _, _, firstDone := start(nil)
		simWaitFor(t, "the first engine holds the VIP", func() (bool, string) {
			on := node.has(simLinkName, vip)
			return on && stateOf(first) == "MASTER", fmt.Sprintf("state %s, holds %v", stateOf(first), on)
		})
		// The peer has heard us: it is BACKUP, not still in its start-up.
		simWaitFor(t, "the peer is backup", func() (bool, string) {
			return stateOf(pe) == "BACKUP", "state " + stateOf(pe)
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
				on, there := node.has(simLinkName, vip), peer.has(simLinkName, vip)
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
		if !node.has(simLinkName, vip) {
			t.Fatalf("after Handoff the VIP is not on the node: the predecessor must leave it")
		}
		time.Sleep(100 * time.Millisecond) // the successor's start-up; under the peer's master down interval (300 ms + skew)
		second, secondLog, stopSecond, _ := start(masters)
		simWaitFor(t, "the successor is master", func() (bool, string) {
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
			t.Errorf("during the hand-off the VIP was off the node in %d and on the peer in %d of %d samples; want 0 and 0", o, d, n)
		}
		if strings.Contains(peerLog.String(), "to=MASTER") {
			t.Errorf("the peer became master during the hand-off")
		}
		if !strings.Contains(secondLog.String(), "handed over by the test's first engine") {
			t.Errorf("the successor's log does not say it adopted its mastership")
		}
		left, err := ledger.Load()
		if err != nil || len(left) != 1 || left[0].Prefix.Addr() != vip {
			t.Errorf("the ledger after the hand-off lists %v (%v), want the VIP: a crash of the successor must remove it", left, err)
		}

		// The successor stops as any engine does: the peer takes over.
		stopSecond()
		simWaitFor(t, "the peer takes over after the successor stops", func() (bool, string) {
			on, there := node.has(simLinkName, vip), peer.has(simLinkName, vip)
			return !on && there, fmt.Sprintf("node holds %v, the peer's node %v", on, there)
		})
	})
}

// TestAwaitPrefersAnswer: the loop answers a hand-off and returns at
// once, so a caller that looks late finds both the answer and the loop's
// end. It must take the answer every time (a plain select took the end
// about half the time, and the k8s agent then released the addresses it
// had just handed over); with no answer it reports the end.
func TestAwaitPrefersAnswer(t *testing.T) {
	done := make(chan struct{})
	close(done)
	for i := range 200 {
		reply := make(chan []string, 1)
		reply <- []string{fmt.Sprint("VI_", i)}
		got, ok := await(reply, done)
		if !ok || len(got) != 1 || got[0] != fmt.Sprint("VI_", i) {
			t.Fatalf("try %d: await with the answer and the end both there = %v, %v; want [VI_%d], true", i, got, ok, i)
		}
	}
	if got, ok := await(make(chan []string, 1), done); ok {
		t.Fatalf("await with only the end there = %v, true; want false", got)
	}
	open := make(chan error, 1)
	go func() { open <- nil }()
	if _, ok := await(open, make(chan struct{})); !ok {
		t.Fatal("await on a running loop that answers reported its end")
	}
}

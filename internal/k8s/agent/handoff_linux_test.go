package agent_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/k8s/k8slab"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestHandoffToSuccessor runs a second agent beside the one that holds a
// Service's address, as a DaemonSet's surge pod runs (internal/nodelab
// runs the whole rolling update), and walks the hand-off's failure cases:
//   - the successor's engine is killed before it takes over: its
//     supervisor must not sweep the ledger, which lists the serving
//     agent's addresses, and the serving agent forgets it;
//   - the supervisor restarts it and it gets ready; SIGTERM to the
//     serving agent hands the node over;
//   - the new agent, with no successor, releases on SIGTERM as before.
//
// The address's holders are sampled every 5 ms: through the first two
// steps it never leaves the node; after the last it moves.
func TestHandoffToSuccessor(t *testing.T) {
	testnet.RequireRoot(t)
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	l := k8slab.Start(ctx, t, k8slab.Options{Nodes: 2, Prefix: "vsHo", Bin: bin, Advert: 100 * time.Millisecond,
		Services: 1, Supervisor: true, Caps: true})
	if err := l.WaitHeld(ctx, time.Second, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	vip := k8slab.PoolAddr(0)
	hs := holders(t, l.Nodes, vip)
	if len(hs) != 1 {
		t.Fatalf("%s held by %v", vip, hs)
	}
	node, other := l.Nodes[0], l.Nodes[1]
	if hs[0] != node.Name {
		node, other = other, node
	}
	var succ *peers.Node
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- serving agent %s log (tail):\n%s", node.Name, testutil.Tail(node.Log(), 40))
			if succ != nil {
				t.Logf("---- successor log (tail):\n%s", testutil.Tail(succ.Log(), 40))
			}
		}
		if succ != nil && succ.Alive() {
			_ = succ.Kill()
		}
	})

	var (
		mu      sync.Mutex
		samples []string
	)
	sampleCtx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		last := ""
		for sampleCtx.Err() == nil {
			var got []string
			for _, n := range l.Nodes {
				if ok, err := n.Host.HasAddr(vip); err == nil && ok {
					got = append(got, n.Name)
				}
			}
			if cur := strings.Join(got, "+"); cur != last || len(samples) == 0 {
				mu.Lock()
				samples = append(samples, cur)
				mu.Unlock()
				last = cur
			}
			time.Sleep(5 * time.Millisecond) // sampling the kernel, bounded by sampleCtx
		}
	}()
	logHas := func(what string, log func() string, s string) func() error {
		return func() error {
			if !strings.Contains(log(), s) {
				return fmt.Errorf("%s's log does not say %q yet", what, s)
			}
			return nil
		}
	}

	cmd, err := node.AgentCommand()
	if err != nil {
		t.Fatal(err)
	}
	if succ, err = peers.StartCmd(node.Host, cmd); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, logHas("the successor", succ.Log, "another agent serves this node"))
	testutil.Eventually(t, 30*time.Second, logHas("the serving agent", node.Log, "a new agent started on this node"))

	// The successor's engine dies before it takes over.
	child, err := succ.EnginePid()
	if err != nil || child == succ.Pid() {
		t.Fatalf("the successor's supervised child: pid %d (%v)", child, err)
	}
	if err := syscall.Kill(child, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, logHas("the successor's supervisor", succ.Log, "another agent serves this node; leaving its addresses"))
	testutil.Eventually(t, 30*time.Second, logHas("the serving agent", node.Log, "went away before it took over"))
	// Restarted by its supervisor, it connects again and gets ready.
	testutil.Eventually(t, 60*time.Second, func() error {
		if n := strings.Count(node.Log(), "is ready to take over"); n < 1 {
			return fmt.Errorf("the serving agent has not heard the restarted successor is ready")
		}
		return nil
	})

	// The serving agent is stopped: it hands over.
	if err := node.TermAgent(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, logHas("the successor", succ.Log, "taking over from the agent that served this node"))
	if !strings.Contains(node.Log(), "handed this node over to the new agent") {
		t.Errorf("the serving agent's log does not say it handed over")
	}
	time.Sleep(time.Second) // the other node's master down interval passes several times
	mu.Lock()
	before := slices.Clone(samples)
	mu.Unlock()
	if !slices.Equal(before, []string{node.Name}) {
		t.Errorf("holders of %s through the failed and the good hand-off: %q, want only %s throughout", vip, before, node.Name)
	}

	// With no successor, a stop releases: the other node takes over.
	if err := succ.Term(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if got := holders(t, l.Nodes, vip); !slices.Equal(got, []string{other.Name}) {
			return fmt.Errorf("held by %v after the last agent stopped, want %s", got, other.Name)
		}
		return nil
	})
	stopSampling()
	<-sampled
}

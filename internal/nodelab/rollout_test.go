//go:build linux

package nodelab_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vipstack/vipstack/internal/nodelab"
)

const (
	// rolloutRate is the new connections per second to the LoadBalancer
	// address during the agent DaemonSet's rolling update (issue 26).
	rolloutRate = 200
	// rolloutLoadMax bounds the load's duration: at most
	// rolloutRate*rolloutLoadMax/time.Second connections.
	rolloutLoadMax = 150 * time.Second
)

// TestAgentRollingUpdate restarts the agent DaemonSet (kubectl rollout
// restart with deploy/'s strategy: maxSurge 1, maxUnavailable 0; on each
// node the new agent starts beside the old one, and the old one hands its
// masters over when the kubelet stops it) while a client opens 200 new
// connections per second to a LoadBalancer address, and counts failed
// connections and the address's moves. Issue 26's target, asserted: no
// failed connection, and no address that moves away from a node and back
// because that node's agent restarted. The address should not move at
// all; a move is logged.
func TestAgentRollingUpdate(t *testing.T) {
	lab, c, svc := installLB(t, applyDeploy)
	ctx := t.Context()
	addr := waitLBAddress(t, c, svc)
	first := waitAnswers(t, lab, addr, nil)
	t.Logf("%s answers from the client; held by %s", addr, first.Name)

	// Every agent available first: the DaemonSet controller replaces an
	// old pod that is not (still starting, not ready yet) without a surge
	// pod, so the hand-off needs a settled DaemonSet, as in production.
	err := poll(ctx, 120*time.Second, func() (bool, string) {
		ds, err := lab.Clientset.AppsV1().DaemonSets("vipstack-system").Get(ctx, "vipstack-agent", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return rolledOut(ds, ds.Generation, int32(len(lab.Nodes)))
	})
	if err != nil {
		t.Fatalf("agents before the rollout: %v", err)
	}
	samp, err := newHolderSampler(lab, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer samp.close()
	loadCtx, stopLoad := context.WithTimeout(ctx, rolloutLoadMax)
	defer stopLoad()
	var wg sync.WaitGroup
	var res loadResult
	wg.Add(2)
	go func() { defer wg.Done(); samp.run(loadCtx, 20*time.Millisecond) }()
	go func() { defer wg.Done(); res = runLoad(loadCtx, lab, netip.AddrPortFrom(addr, 80), rolloutRate) }()

	time.Sleep(3 * time.Second) // a baseline under load before the rollout
	began := time.Now()
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, began.Format(time.RFC3339))
	ds, err := lab.Clientset.AppsV1().DaemonSets("vipstack-system").Patch(ctx, "vipstack-agent", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gen := ds.Generation
	err = poll(ctx, 120*time.Second, func() (bool, string) {
		ds, err := lab.Clientset.AppsV1().DaemonSets("vipstack-system").Get(ctx, "vipstack-agent", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return rolledOut(ds, gen, int32(len(lab.Nodes)))
	})
	rollout := time.Since(began)
	if err != nil {
		t.Errorf("rollout: %v", err)
	}
	time.Sleep(5 * time.Second) // the address settles under load
	stopLoad()
	wg.Wait()

	moves, bounces, samples := samp.moves()
	t.Logf("rolling update of %d agents in %v under %d new connections/s: %d connections, %d failed %v; the address moved %d times %v, %d of them away and back (holders sampled every 20 ms: %q)",
		len(lab.Nodes), rollout.Round(100*time.Millisecond), rolloutRate, res.total, res.failed, res.errs, len(moves), moves, bounces, samples)
	if res.total < rolloutRate*5 {
		t.Errorf("only %d connections were opened: the load generator did not keep up", res.total)
	}
	if res.failed > 0 {
		t.Errorf("%d of %d connections failed (%v); want none", res.failed, res.total, res.errs)
	}
	if bounces > 0 {
		t.Errorf("the address moved away from a node and back %d times (%v); want none: the agents hand over in place", bounces, moves)
	}
	if len(moves) > 0 {
		t.Logf("the address moved %v, without coming back", moves)
	}
	if i := slices.IndexFunc(samples, func(s string) bool { return s == "" || strings.Contains(s, "+") }); i >= 0 {
		t.Errorf("the address was held by %q at one sample (%q); want exactly one holder throughout", samples[i], samples)
	}
	// Every node's new agent took over from its old one (the holder's
	// with its master): the rollout went through the hand-off, not around it.
	for _, n := range lab.Nodes {
		if log := agentLogs(n); !strings.Contains(log, "taking over from the agent that served this node") {
			t.Errorf("%s: no new agent's log says it took over from the old one:\n%s", n.Name, log)
		}
	}
	waitAnswers(t, lab, addr, nil)
}

// agentLogs joins the logs of every agent container the node's kubelet
// kept (the pods of both generations while they overlap).
func agentLogs(n *nodelab.Node) string {
	files, _ := filepath.Glob(filepath.Join(n.Dir, "pods-logs", "*_vipstack-agent-*_*", "agent", "*.log"))
	var b strings.Builder
	for _, f := range files {
		data, _ := os.ReadFile(f)
		b.Write(data)
	}
	return b.String()
}

func rolledOut(ds *appsv1.DaemonSet, gen int64, n int32) (bool, string) {
	s := ds.Status
	return s.ObservedGeneration >= gen && s.UpdatedNumberScheduled == n && s.NumberAvailable == n && s.NumberUnavailable == 0,
		fmt.Sprintf("generation %d observed %d: updated %d, available %d of %d", gen, s.ObservedGeneration, s.UpdatedNumberScheduled, s.NumberAvailable, n)
}

type loadResult struct {
	total, failed int
	errs          map[string]int // failures by kind
}

// runLoad opens rate new connections per second from the lab's client to
// addr until ctx ends, each expecting a backend's answer.
func runLoad(ctx context.Context, lab *nodelab.Lab, addr netip.AddrPort, rate int) loadResult {
	var mu sync.Mutex
	res := loadResult{errs: map[string]int{}}
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return res
		case <-tick.C:
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := fetchFrom(lab.Client, addr)
			mu.Lock()
			defer mu.Unlock()
			res.total++
			switch {
			case err != nil:
				res.failed++
				res.errs[errKind(err)]++
			case !strings.HasPrefix(got, "worker-"):
				res.failed++
				res.errs["unexpected answer"]++
			}
		}()
	}
}

func errKind(err error) string {
	s := err.Error()
	for _, k := range []string{"connection refused", "connection reset", "i/o timeout", "no route to host", "network is unreachable", "EOF"} {
		if strings.Contains(s, k) {
			return k
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "deadline"
	}
	return s
}

// holderSampler records which nodes hold an address, from netlink in
// each node's namespace.
type holderSampler struct {
	addr   netip.Addr
	names  []string
	links  []netlink.Link
	hs     []*netlink.Handle
	mu     sync.Mutex
	events []string // the holder set after each change, "" for none
}

func newHolderSampler(lab *nodelab.Lab, addr netip.Addr) (*holderSampler, error) {
	s := &holderSampler{addr: addr}
	for _, n := range lab.Nodes {
		ns, err := netns.GetFromName(n.Host.Name)
		if err != nil {
			s.close()
			return nil, err
		}
		h, err := netlink.NewHandleAt(ns)
		ns.Close()
		if err != nil {
			s.close()
			return nil, err
		}
		s.hs = append(s.hs, h)
		l, err := h.LinkByName(n.Host.Link)
		if err != nil {
			s.close()
			return nil, err
		}
		s.links, s.names = append(s.links, l), append(s.names, n.Name)
	}
	return s, nil
}

func (s *holderSampler) run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	last := "?"
	for {
		var holders []string
		for i, h := range s.hs {
			addrs, err := h.AddrList(s.links[i], netlink.FAMILY_V4)
			if err != nil {
				continue
			}
			for _, a := range addrs {
				if ip, ok := netip.AddrFromSlice(a.IP); ok && ip.Unmap() == s.addr {
					holders = append(holders, s.names[i])
				}
			}
		}
		cur := strings.Join(holders, "+")
		if cur != last {
			s.mu.Lock()
			s.events = append(s.events, cur)
			s.mu.Unlock()
			last = cur
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// moves returns the changes of holder (ignoring moments with no or two
// holders), how many returned to the holder before the last one, and
// the holder sets sampled ("" none, "a+b" both).
func (s *holderSampler) moves() (moves []string, bounces int, samples []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var seq []string
	for _, e := range s.events {
		if e != "" && !strings.Contains(e, "+") && (len(seq) == 0 || seq[len(seq)-1] != e) {
			seq = append(seq, e)
		}
	}
	for i := 1; i < len(seq); i++ {
		moves = append(moves, seq[i-1]+"->"+seq[i])
		if i >= 2 && seq[i] == seq[i-2] {
			bounces++
		}
	}
	return moves, bounces, slices.Clone(s.events)
}

func (s *holderSampler) close() {
	for _, h := range s.hs {
		h.Close()
	}
}

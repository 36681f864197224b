//go:build linux

package story_test

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/demo"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestStoryReloadLBPortNoRefused: while a client opens connections to the
// API VIP back to back, the cluster file moves the load balancer to
// another port. No connection may be refused: the redirect must never
// point at a port the load balancer no longer listens on. (Before the
// fix the load balancer closed its old port in the reload and the
// redirect followed a moment later, from its own goroutine: measured 0 to
// 6 connections refused per reload, out of about 2800 opened back to back
// over 1.5 s; 7 of 8 reloads refused at least one.)
func TestStoryReloadLBPortNoRefused(t *testing.T) {
	testnet.RequireRoot(t)
	bin := buildVipstack(t)
	out := &syncbuf.Buffer{}
	c, err := demo.Start(t.Context(), demo.Spec{Masters: 1, Advert: time.Second}, demo.Options{Bin: bin, Out: out, Prefix: "vsae"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range c.Nodes {
				t.Logf("---- %s's node agent, last lines:\n%s", n.Name, testutil.Tail(n.Log(), 25))
			}
		}
		c.Close()
	})
	ctx := t.Context()
	m := c.Node("master-0")
	if err := c.WaitLBs(ctx, c.Nodes, c.Nodes, time.Minute); err != nil {
		t.Fatal(err)
	}
	api := vipOf(t, demo.KindAPI)
	if _, err := c.WaitHolder(ctx, api, func(*demo.Node) bool { return true }, holdFor, stepTimeout); err != nil {
		t.Fatal(err)
	}
	target := net.JoinHostPort(api.String(), "6443")
	dial := func() error {
		return c.Client.Do(func() error {
			conn, err := net.DialTimeout("tcp", target, time.Second)
			if err != nil {
				return err
			}
			return conn.Close()
		})
	}
	if err := c.Poll(ctx, stepTimeout, func(context.Context) (bool, string, error) {
		err := dial()
		return err == nil, fmt.Sprint(err), nil
	}); err != nil {
		t.Fatalf("the client does not reach VIP:6443 before the reload: %v", err)
	}

	for i, port := range []int{9446, 9445} {
		var ok, refused atomic.Int64
		var lastErr atomic.Value
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			// Bounded: at most 20000 connections or 20 s.
			for n, end := 0, time.Now().Add(20*time.Second); n < 20000 && time.Now().Before(end); n++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := dial(); err != nil {
					refused.Add(1)
					lastErr.Store(err.Error())
				} else {
					ok.Add(1)
				}
			}
		}()
		time.Sleep(300 * time.Millisecond) // connections before the reload, not a timer of ours
		data := c.Spec.ClusterYAML()
		if port != 9445 {
			data += fmt.Sprintf("ports: {lb: %d}\n", port)
		}
		if err := c.Rewrite(data); err != nil {
			t.Fatal(err)
		}
		err := c.Poll(ctx, stepTimeout, func(ctx context.Context) (bool, string, error) {
			st, err := m.Status(ctx)
			if err != nil {
				return false, "", err
			}
			for _, r := range st.Redirects {
				if int(r.ToPort) == port && r.InEffect {
					return true, "", nil
				}
			}
			return false, fmt.Sprintf("redirects %+v, want one in effect to :%d", st.Redirects, port), nil
		})
		time.Sleep(500 * time.Millisecond) // connections after the move
		close(stop)
		<-done
		if err != nil {
			t.Fatalf("reload %d: %v", i+1, err)
		}
		t.Logf("reload %d (to port %d): %d connections accepted, %d failed", i+1, port, ok.Load(), refused.Load())
		if refused.Load() > 0 {
			t.Errorf("reload %d (to port %d): %d of %d connections failed (last: %v), want none", i+1, port, refused.Load(), refused.Load()+ok.Load(), lastErr.Load())
		}
	}
}

package agent

import (
	"errors"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/bgp"
)

// TestExitCause: a speaker stops with bgp.ErrRestarting (routes left to
// the routers' graceful restart) only when the agent handed the node over
// and every peer has graceful restart; otherwise it withdraws first.
func TestExitCause(t *testing.T) {
	peer := func(a string, gr time.Duration) bgp.Peer {
		return bgp.Peer{Address: netip.MustParseAddr(a), ASN: 64500, GracefulRestart: gr}
	}
	for _, tc := range []struct {
		name       string
		handedOver bool
		peers      []bgp.Peer
		want       error
	}{
		{"handed over, every peer with graceful restart", true, []bgp.Peer{peer("198.18.1.1", 120*time.Second), peer("198.18.2.1", time.Minute)}, bgp.ErrRestarting},
		{"handed over, one peer without", true, []bgp.Peer{peer("198.18.1.1", 120*time.Second), peer("198.18.2.1", 0)}, nil},
		{"released, not handed over", false, []bgp.Peer{peer("198.18.1.1", 120*time.Second)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Agent{log: slog.New(slog.DiscardHandler)}
			b := newBGPRunner(a)
			b.cfg = bgp.Config{ASN: 64512, Peers: tc.peers}
			b.stopped(tc.handedOver)
			b.stopped(!tc.handedOver) // a second word is dropped: the first decides
			if got := b.exitCause(); !errors.Is(got, tc.want) || (tc.want == nil && got != nil) {
				t.Errorf("exitCause() = %v, want %v", got, tc.want)
			}
		})
	}
}

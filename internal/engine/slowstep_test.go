package engine

import (
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/vrrp"
	"github.com/vipstack/vipstack/internal/vrrp/transport"
)

// TestWarnSlow: a loop step that keeps the loop longer than slowStep is
// logged with what it was; a quicker one is not.
func TestWarnSlow(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	var buf syncbuf.Buffer
	e := &Engine{clk: clk, log: slog.New(slog.NewTextHandler(&buf, nil))}
	ev := event{packet: &transport.Packet{Src: netip.MustParseAddr("198.18.0.3")}, advert: &vrrp.Advertisement{VRID: 51, Priority: 100}}

	began := clk.Now()
	clk.Advance(slowStep / 2)
	e.warnSlow(began, ev.String)
	if got := buf.String(); got != "" {
		t.Errorf("a step of %v logged %q, want nothing", slowStep/2, got)
	}
	began = clk.Now()
	clk.Advance(slowStep + 50*time.Millisecond)
	e.warnSlow(began, ev.String)
	got := buf.String()
	for _, want := range []string{"level=WARN", "engine loop step took long", `step="advertisement VRID 51 priority 100 from 198.18.0.3"`, "took=150ms"} {
		if !strings.Contains(got, want) {
			t.Errorf("log %q lacks %q", got, want)
		}
	}
}

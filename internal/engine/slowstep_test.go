package engine

import (
	"errors"
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
	for _, want := range []string{"level=WARN", "engine loop step took long", `step="advertisement VRID 51 priority 100 from 198.18.0.3"`, "took=150ms", `slow_requests="none over 10ms"`} {
		if !strings.Contains(got, want) {
			t.Errorf("log %q lacks %q", got, want)
		}
	}

	// The requests that took slowPart or longer are named, in order; a
	// quick one is not, and the next step starts with none.
	seen := len(buf.String())
	began = clk.Now()
	errDel := errors.New("netlink says no")
	if err := e.timed(func() string { return "netlink delete fd00:bb::100/64 dev eth0" }, func() error { clk.Advance(120 * time.Millisecond); return errDel }); err != errDel {
		t.Errorf("timed returned %v, want f's error", err)
	}
	_ = e.timed(func() string { return "quick" }, func() error { clk.Advance(slowPart - time.Millisecond); return nil })
	_ = e.timed(func() string { return "ledger write /run/x" }, func() error { clk.Advance(slowPart); return nil })
	e.warnSlow(began, ev.String)
	got = buf.String()[seen:]
	if want := `slow_requests="netlink delete fd00:bb::100/64 dev eth0 120ms; ledger write /run/x 10ms"`; !strings.Contains(got, want) {
		t.Errorf("log %q lacks %q", got, want)
	}
	seen = len(buf.String())
	began = clk.Now()
	clk.Advance(2 * slowStep)
	e.warnSlow(began, ev.String)
	if got := buf.String()[seen:]; !strings.Contains(got, `slow_requests="none over 10ms"`) {
		t.Errorf("the next step's log %q names the last step's requests", got)
	}
}

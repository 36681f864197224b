package healthcheck

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCheckerIntervals: fastinter while the state changes (and at the
// start, one failure from DOWN), downinter while DOWN, inter while fully
// UP, as haproxy's srv_getinter picks them; each probe starts that long
// after the previous one started.
func TestCheckerIntervals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spec := Spec{Inter: 10 * time.Second, FastInter: time.Second, DownInter: 5 * time.Second, Rise: 2, Fall: 2}
		seq := []bool{false, false, false, true, true, true} // then failures
		var starts []time.Duration
		t0 := time.Now()
		c := New(spec, ProberFunc(func(ctx context.Context) Result {
			i := len(starts)
			starts = append(starts, time.Since(t0))
			if i < len(seq) && seq[i] {
				return Result{OK: true, Status: L4OK}
			}
			return Result{Status: L4CON}
		}), Options{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { c.Run(ctx); close(done) }()
		time.Sleep(50 * time.Second)
		cancel()
		<-done
		s := time.Second
		// The start is one failure from DOWN (fast, re-armed after the
		// result): fail (DOWN: down), fail, fail, pass (DOWN 1/2:
		// fast), pass (UP: inter), pass, fail (UP 1/2: fast), fail
		// (DOWN: down).
		want := []time.Duration{0, 5 * s, 10 * s, 15 * s, 16 * s, 26 * s, 36 * s, 37 * s, 42 * s, 47 * s}
		if diff := cmp.Diff(want, starts); diff != "" {
			t.Errorf("probe start times (-want +got):\n%s", diff)
		}
	})
}

// TestSpecIntervalSpread: spread-checks moves the interval by up to its
// percentage either way.
func TestSpecIntervalSpread(t *testing.T) {
	up := State{Up: true}
	for _, tt := range []struct {
		jitter float64
		want   time.Duration
	}{{-1, 8 * time.Second}, {0, 10 * time.Second}, {0.5, 11 * time.Second}} {
		s := Spec{Inter: 10 * time.Second, Spread: 20, Jitter: func() float64 { return tt.jitter }}
		if got := s.interval(up); got != tt.want {
			t.Errorf("jitter %v: interval %v, want %v", tt.jitter, got, tt.want)
		}
	}
}

package clock

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestFakeFiresInDeadlineOrder(t *testing.T) {
	start := time.Unix(1000, 0)
	c := NewFake(start)
	var got []string
	c.AfterFunc(3*time.Second, func() { got = append(got, "c@"+c.Now().Sub(start).String()) })
	c.AfterFunc(1*time.Second, func() { got = append(got, "a@"+c.Now().Sub(start).String()) })
	b := c.AfterFunc(2*time.Second, func() { got = append(got, "b") })
	if !b.Stop() {
		t.Fatal("Stop of an armed timer returned false")
	}
	c.Advance(2500 * time.Millisecond)
	if len(got) != 1 || got[0] != "a@1s" {
		t.Fatalf("after 2.5s got %v, want [a@1s]", got)
	}
	c.Advance(time.Second)
	if len(got) != 2 || got[1] != "c@3s" {
		t.Fatalf("after 3.5s got %v, want [a@1s c@3s]", got)
	}
	if c.Pending() != 0 {
		t.Fatalf("Pending = %d, want 0", c.Pending())
	}
}

func TestFakeTimerChannelAndReset(t *testing.T) {
	c := NewFake(time.Unix(0, 0))
	tm := c.NewTimer(time.Second)
	c.Advance(900 * time.Millisecond)
	tm.Reset(time.Second) // now due at 1.9s
	c.Advance(200 * time.Millisecond)
	select {
	case <-tm.C():
		t.Fatal("timer fired at its old deadline after Reset")
	default:
	}
	c.Advance(800 * time.Millisecond)
	select {
	case at := <-tm.C():
		if want := time.Unix(0, 0).Add(1900 * time.Millisecond); !at.Equal(want) {
			t.Fatalf("fired at %v, want %v", at, want)
		}
	default:
		t.Fatal("timer did not fire after its reset deadline")
	}
}

// TestSleep: Sleep returns nil once d has passed, and ctx's error when ctx
// ends first or has ended.
func TestSleep(t *testing.T) {
	if err := Sleep(t.Context(), time.Millisecond); err != nil {
		t.Errorf("Sleep(1ms) = %v, want nil", err)
	}
	if err := Sleep(t.Context(), 0); err != nil {
		t.Errorf("Sleep(0) = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep(1h) with ctx canceled = %v, want context.Canceled", err)
	}
	if err := Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep(0) with ctx canceled = %v, want context.Canceled", err)
	}
}

package controller

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// TestAnnouncedCondition steps one address through a failover and checks
// the condition and the Event after each step: a move is told once, when
// a single node announces it again, even across moments when two or none
// do.
func TestAnnouncedCondition(t *testing.T) {
	a := netip.MustParseAddr("198.18.0.200")
	svc := &corev1.Service{}
	last := map[netip.Addr]string{}
	var old *metav1.Condition
	steps := []struct {
		by        []string
		status    metav1.ConditionStatus
		msg, move string
	}{
		{by: []string{"n1"}, status: metav1.ConditionTrue, msg: "198.18.0.200 by n1"},
		{by: []string{"n1", "n2"}, status: metav1.ConditionTrue, msg: "198.18.0.200 by n1,n2"},
		{by: []string{"n2"}, status: metav1.ConditionTrue, msg: "198.18.0.200 by n2", move: "198.18.0.200 moved from n1 to n2"},
		{by: nil, status: metav1.ConditionFalse, msg: "no agent reports announcing 198.18.0.200"},
		{by: []string{"n3"}, status: metav1.ConditionTrue, msg: "198.18.0.200 by n3", move: "198.18.0.200 moved from n2 to n3"},
		{by: []string{"n3"}, status: metav1.ConditionTrue, msg: "198.18.0.200 by n3"},
	}
	for i, st := range steps {
		by := map[netip.Addr][]string{}
		if st.by != nil {
			by[a] = st.by
		}
		c, p := announcedCondition(svc, []netip.Addr{a}, by, old, last, metav1.Now())
		if c.Status != st.status || c.Message != st.msg {
			t.Errorf("step %d: condition %s %q, want %s %q", i, c.Status, c.Message, st.status, st.msg)
		}
		move := ""
		if p != nil {
			move = p.msg
		}
		if move != st.move {
			t.Errorf("step %d: move %q, want %q", i, move, st.move)
		}
		old = &c
	}
}

func TestChangedAddrs(t *testing.T) {
	a := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, x := range s {
			out = append(out, netip.MustParseAddr(x))
		}
		return out
	}
	tests := []struct {
		name          string
		was, now, out []netip.Addr
	}{
		{name: "renewed, nothing changed", was: a("198.18.0.1", "198.18.0.2"), now: a("198.18.0.2", "198.18.0.1")},
		{name: "first look", now: a("198.18.0.1"), out: a("198.18.0.1")},
		{name: "one more, one less", was: a("198.18.0.1", "198.18.0.2"), now: a("198.18.0.2", "198.18.0.3"), out: a("198.18.0.3", "198.18.0.1")},
		{name: "silent", was: a("198.18.0.1", "fd00::1"), out: a("198.18.0.1", "fd00::1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := changedAddrs(tt.was, tt.now); !slices.Equal(got, tt.out) {
				t.Errorf("changedAddrs(%v, %v) = %v, want %v", tt.was, tt.now, got, tt.out)
			}
		})
	}
}

// TestDeferAnnounced checks that status writes changing only AnnouncedBy
// go at Options.AnnouncedWrites in turn, each Service keeping its place
// across its requeue, while a write that changes an address is never held.
func TestDeferAnnounced(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	c := &Controller{clk: clk, announceRate: rate.NewLimiter(2, 2), announceDue: map[types.NamespacedName]time.Time{}}
	announced := func(msg string) corev1.ServiceStatus {
		return corev1.ServiceStatus{
			LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "198.18.0.200"}}},
			Conditions:   []metav1.Condition{{Type: v1alpha1.ServiceConditionAnnounced, Status: metav1.ConditionTrue, Reason: ReasonAnnounced, Message: msg}},
		}
	}
	was, now := announced("198.18.0.200 by n1"), announced("198.18.0.200 by n2")
	svc := func(i int) types.NamespacedName {
		return types.NamespacedName{Namespace: "lab", Name: fmt.Sprintf("s%d", i)}
	}
	type want struct {
		delay time.Duration
		held  bool
	}
	check := func(step string, n types.NamespacedName, was, now corev1.ServiceStatus, w want) {
		t.Helper()
		d, ok := c.deferAnnounced(n, was, now)
		if ok != w.held || d != w.delay {
			t.Errorf("%s: deferAnnounced(%s) = %v, %v; want %v, %v", step, n, d, ok, w.delay, w.held)
		}
	}
	// The burst of 2 goes at once; the next two wait 0.5 s and 1 s.
	check("burst", svc(0), was, now, want{})
	check("burst", svc(1), was, now, want{})
	check("third", svc(2), was, now, want{500 * time.Millisecond, true})
	check("fourth", svc(3), was, now, want{time.Second, true})
	// An address change is written at once, whatever the queue.
	moved := announced("198.18.0.200 by n2")
	moved.LoadBalancer.Ingress[0].IP = "198.18.0.201"
	check("address", svc(4), was, moved, want{})
	// Nothing to write: never held.
	check("unchanged", svc(5), was, was, want{})
	// Looked at again early, s2 keeps its turn rather than taking a new one.
	clk.Advance(200 * time.Millisecond)
	check("s2 early", svc(2), was, now, want{300 * time.Millisecond, true})
	clk.Advance(300 * time.Millisecond)
	check("s2 due", svc(2), was, now, want{})
	check("s3 not yet", svc(3), was, now, want{500 * time.Millisecond, true})
	clk.Advance(500 * time.Millisecond)
	check("s3 due", svc(3), was, now, want{})
	if len(c.announceDue) != 0 {
		t.Errorf("announceDue left with %v", c.announceDue)
	}
}

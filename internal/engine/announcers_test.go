package engine

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// countingAnnouncer counts its announcements and whether it was closed.
type countingAnnouncer struct {
	name   string
	sent   int
	closed bool
}

func (a *countingAnnouncer) Announce(netip.Addr) error { a.sent++; return nil }
func (a *countingAnnouncer) Close() error              { a.closed = true; return nil }

// TestAnnouncersShared: instances on one interface share one announcer,
// opened by the first and closed with the last; another interface (or the
// same name with another index, an interface created again) has its own;
// closing one instance's use twice counts once.
func TestAnnouncersShared(t *testing.T) {
	var p announcers
	var opened []*countingAnnouncer
	get := func(k annKey) Announcer {
		t.Helper()
		a, err := p.get(k, func() (Announcer, error) {
			c := &countingAnnouncer{name: k.name}
			opened = append(opened, c)
			return c, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	eth0, eth1, eth0again := annKey{name: "eth0", index: 2}, annKey{name: "eth1", index: 3}, annKey{name: "eth0", index: 9}
	a, b := get(eth0), get(eth0)
	c, d := get(eth1), get(eth0again)
	for _, x := range []Announcer{a, b, c, d} {
		if err := x.Announce(netip.MustParseAddr("198.18.0.100")); err != nil {
			t.Fatal(err)
		}
	}
	type state struct {
		Name   string
		Sent   int
		Closed bool
	}
	states := func() []state {
		var out []state
		for _, o := range opened {
			out = append(out, state{o.name, o.sent, o.closed})
		}
		return out
	}
	for _, step := range []struct {
		name  string
		close Announcer
		want  []state
	}{
		{name: "four uses, three interfaces", want: []state{{"eth0", 2, false}, {"eth1", 1, false}, {"eth0", 1, false}}},
		{name: "one of eth0's two uses ends", close: a, want: []state{{"eth0", 2, false}, {"eth1", 1, false}, {"eth0", 1, false}}},
		{name: "the same use ends again: no effect", close: a, want: []state{{"eth0", 2, false}, {"eth1", 1, false}, {"eth0", 1, false}}},
		{name: "eth0's last use ends", close: b, want: []state{{"eth0", 2, true}, {"eth1", 1, false}, {"eth0", 1, false}}},
		{name: "eth1's only use ends", close: c, want: []state{{"eth0", 2, true}, {"eth1", 1, true}, {"eth0", 1, false}}},
	} {
		if step.close != nil {
			if err := step.close.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if diff := cmp.Diff(step.want, states()); diff != "" {
			t.Fatalf("%s (-want +got):\n%s", step.name, diff)
		}
	}
	// A new use of eth0 after its last ended opens a new announcer.
	get(eth0)
	if len(opened) != 4 {
		t.Errorf("%d announcers opened, want 4 (eth0 opened again)", len(opened))
	}
}

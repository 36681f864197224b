package engine

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestConflictBook checks how a conflict is recorded, logged again, lumped
// past maxConflictPeers and forgotten conflictForget after its last packet.
func TestConflictBook(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 4, 0, 0, 0, time.UTC)
	a := netip.MustParseAddr("198.18.0.2")
	b := netip.MustParseAddr("198.18.0.3")
	type step struct {
		at      time.Duration // after t0
		from    netip.Addr    // record a packet from it; invalid: expire only
		kind    string
		wantLog bool
	}
	type entry struct {
		Peer, Kind string
		Count      uint64
	}
	tests := []struct {
		name     string
		steps    []step
		expireAt time.Duration
		wantOver []entry
		wantLeft []entry
		wantNext time.Duration // -1: none
	}{
		{
			name:     "first packet logged, repeats within a minute not",
			steps:    []step{{at: 0, from: a, kind: "auth", wantLog: true}, {at: time.Second, from: a, kind: "auth"}, {at: 59 * time.Second, from: a, kind: "auth"}},
			expireAt: 60 * time.Second,
			wantLeft: []entry{{Peer: "198.18.0.2", Kind: "auth", Count: 3}},
			wantNext: 59*time.Second + conflictForget,
		},
		{
			name:     "logged again after a minute",
			steps:    []step{{at: 0, from: a, kind: "auth", wantLog: true}, {at: conflictLogEvery, from: a, kind: "auth", wantLog: true}},
			expireAt: conflictLogEvery,
			wantLeft: []entry{{Peer: "198.18.0.2", Kind: "auth", Count: 2}},
			wantNext: conflictLogEvery + conflictForget,
		},
		{
			name:     "over once quiet for conflictForget",
			steps:    []step{{at: 0, from: a, kind: "dual_master", wantLog: true}, {at: time.Second, from: b, kind: "version", wantLog: true}},
			expireAt: conflictForget,
			wantOver: []entry{{Peer: "198.18.0.2", Kind: "dual_master", Count: 1}},
			wantLeft: []entry{{Peer: "198.18.0.3", Kind: "version", Count: 1}},
			wantNext: time.Second + conflictForget,
		},
		{
			name:     "still there just before",
			steps:    []step{{at: 0, from: a, kind: "dual_master", wantLog: true}},
			expireAt: conflictForget - time.Millisecond,
			wantLeft: []entry{{Peer: "198.18.0.2", Kind: "dual_master", Count: 1}},
			wantNext: conflictForget,
		},
		{
			name:     "a packet again after it was over starts a new entry, logged",
			steps:    []step{{at: 0, from: a, kind: "auth", wantLog: true}, {at: conflictForget}, {at: conflictForget + time.Second, from: a, kind: "auth", wantLog: true}},
			expireAt: conflictForget + time.Second,
			wantOver: nil,
			wantLeft: []entry{{Peer: "198.18.0.2", Kind: "auth", Count: 1}},
			wantNext: 2*conflictForget + time.Second,
		},
		{
			name:     "nothing recorded",
			expireAt: time.Hour,
			wantNext: -1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			book := newConflictBook()
			for i, s := range tc.steps {
				if !s.from.IsValid() {
					book.expire(t0.Add(s.at))
					continue
				}
				_, logged := book.record(t0.Add(s.at), s.from, s.kind, "detail")
				if logged != s.wantLog {
					t.Errorf("step %d (%s from %s at +%v): logged %v, want %v", i, s.kind, s.from, s.at, logged, s.wantLog)
				}
			}
			entries := func(cs []Conflict) []entry {
				var out []entry
				for _, c := range cs {
					out = append(out, entry{Peer: c.Peer, Kind: c.Kind, Count: c.Count})
				}
				return out
			}
			if d := cmp.Diff(tc.wantOver, entries(book.expire(t0.Add(tc.expireAt)))); d != "" {
				t.Errorf("expire at +%v: over (-want +got):\n%s", tc.expireAt, d)
			}
			if d := cmp.Diff(tc.wantLeft, entries(book.list())); d != "" {
				t.Errorf("left in the status (-want +got):\n%s", d)
			}
			var wantNext time.Time
			if tc.wantNext >= 0 {
				wantNext = t0.Add(tc.wantNext)
			}
			if got := book.next(); !got.Equal(wantNext) {
				t.Errorf("next expiry %v, want %v", got, wantNext)
			}
		})
	}
}

// TestConflictBookBounded checks that conflicts from more than
// maxConflictPeers peers are added up in one entry per kind, and that the
// entries one by one come back once the old ones are over.
func TestConflictBookBounded(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 4, 0, 0, 0, time.UTC)
	book := newConflictBook()
	peer := func(i int) netip.Addr { return netip.MustParseAddr(fmt.Sprintf("198.18.1.%d", i)) }
	for i := range maxConflictPeers + 10 {
		book.record(t0, peer(i), "auth", "detail")
	}
	got := book.list()
	if len(got) != maxConflictPeers+1 {
		t.Fatalf("%d entries after %d peers, want %d (one by one, then one for the others)", len(got), maxConflictPeers+10, maxConflictPeers+1)
	}
	var others *Conflict
	for i := range got {
		if got[i].Peer == conflictOthers {
			others = &got[i]
		}
	}
	if others == nil || others.Count != 10 {
		t.Fatalf("entry %q: %+v, want one with count 10", conflictOthers, others)
	}
	book.expire(t0.Add(conflictForget))
	if _, logged := book.record(t0.Add(conflictForget), peer(99), "auth", "detail"); !logged {
		t.Errorf("a new peer after the others were over: not logged")
	}
	if got := book.list(); len(got) != 1 || got[0].Peer != peer(99).String() {
		t.Errorf("after the old conflicts were over, a new peer is listed as %+v, want itself alone", got)
	}
}

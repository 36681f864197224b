package engine

import (
	"net/netip"
	"time"
)

// conflictLogEvery limits how often the same conflict is logged again.
const conflictLogEvery = time.Minute

// conflictForget is how long a conflict stays in the status after its
// last packet. It is over then: the peer was fixed, stopped or left. The
// counter vipstack_vrrp_vrid_conflicts_total and the log keep its history.
const conflictForget = 2 * time.Minute

// addrSkew is how long after an instance's advertised addresses changed
// on a reload an advertisement listing other addresses is taken as a peer
// that has not taken the same change yet, not as a conflict: the
// Kubernetes agents of one group apply a Service's new address within
// milliseconds to seconds of each other, and a backup dropping its
// master's advertisements meanwhile could time out and take over.
const addrSkew = 5 * time.Second

// maxConflictPeers bounds the conflicts an instance records one by one.
// Sources are not authenticated (anyone on the link can send from any
// address), so past this many, conflicts from further peers are added up
// in one entry per kind whose peer is conflictOthers: memory, /status and
// the log stay bounded under a flood from spoofed sources.
const maxConflictPeers = 32

// conflictOthers is the peer of the entry that adds up conflicts past
// maxConflictPeers.
const conflictOthers = "others"

// conflictBook is an instance's current conflicts, by peer and kind. It is
// pure bookkeeping: the engine logs and counts.
type conflictBook struct {
	m map[string]*Conflict
}

// newConflictBook returns an empty book. Its map is made on the first
// conflict: most instances never see one, and a map each was 1,000 small
// objects kept among the start-up's garbage at 1,000 instances.
func newConflictBook() conflictBook { return conflictBook{} }

// record notes a conflicting packet from from. It returns the entry it was
// added to and whether to log it now: on the first packet, and again at
// most every conflictLogEvery.
func (b *conflictBook) record(now time.Time, from netip.Addr, kind, detail string) (*Conflict, bool) {
	peer := from.String()
	key := peer + "/" + kind
	c := b.m[key]
	if c == nil && len(b.m) >= maxConflictPeers {
		peer, key = conflictOthers, conflictOthers+"/"+kind
		c = b.m[key]
		detail = "from more peers than the status lists one by one; last from " + from.String() + ": " + detail
	}
	if c == nil {
		c = &Conflict{Peer: peer, Kind: kind, FirstSeen: now}
		if b.m == nil {
			b.m = map[string]*Conflict{}
		}
		b.m[key] = c
	}
	c.Count++
	c.Detail = detail
	c.LastSeen = now
	if c.Count == 1 || now.Sub(c.loggedAt) >= conflictLogEvery {
		c.loggedAt = now
		return c, true
	}
	return c, false
}

// expire removes the conflicts last seen conflictForget or longer before
// now and returns them, in key order.
func (b *conflictBook) expire(now time.Time) []Conflict {
	var over []Conflict
	for _, k := range sortedKeys(b.m) {
		if c := b.m[k]; now.Sub(c.LastSeen) >= conflictForget {
			over = append(over, *c)
			delete(b.m, k)
		}
	}
	return over
}

// forget removes the conflicts of kind, as over without a word: they were
// judged against a configuration that changed since.
func (b *conflictBook) forget(kind string) {
	for k, c := range b.m {
		if c.Kind == kind {
			delete(b.m, k)
		}
	}
}

// next is when the first conflict expires; zero without any.
func (b *conflictBook) next() time.Time {
	var next time.Time
	for _, c := range b.m {
		if d := c.LastSeen.Add(conflictForget); next.IsZero() || d.Before(next) {
			next = d
		}
	}
	return next
}

// list returns the conflicts in key order.
func (b *conflictBook) list() []Conflict {
	var out []Conflict
	for _, k := range sortedKeys(b.m) {
		out = append(out, *b.m[k])
	}
	return out
}

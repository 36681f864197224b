package lb

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// pool is one backend's servers as one configuration has them. Apply
// builds a new pool each time; servers are shared between pools of the
// same backend when their name and address stay. A server's weight in
// force is its own (server.weight), so that the runtime API may change it.
type pool struct {
	name    string
	balance lbconfig.Balance
	servers []*server

	mu sync.Mutex // guards cw, rrUp and srcMap
	cw []int      // smooth weighted round robin: current weights
	// rrUp is the set of servers up at the last round-robin pick.
	rrUp uint64
	// rot rotates leastconn's starting point so ties spread.
	rot atomic.Uint32
	// noSrv counts the clients that failed with no UP server left to try
	// before their last attempt (the LB's counter for the backend).
	noSrv *atomic.Uint64
	// be is the backend's rate, last session and times (rates.go), kept
	// over reloads as noSrv.
	be *backendCounters
	// Backup servers and the clients waiting for a server below its
	// maxconn (serverparams.go).
	hasBackup, allBackups atomic.Bool
	wait                  waitQueue
	ring                  []ringPoint // hash-type consistent; nil: map-based
	srcMap                sourceMap   // balance source, map-based; under mu
	static                staticRR    // balance static-rr; under mu
	// stick is the pool's stick rules and table (stick.go); nil: none.
	stick *poolStick
}

// newPool builds the pool of servers, weights[i] being servers[i]'s
// configured weight (see serverWeight.configure).
func newPool(name string, balance lbconfig.Balance, servers []*server, weights []int) *pool {
	if balance == "" {
		balance = lbconfig.RoundRobin
	}
	for i, s := range servers {
		if s.weight.configure(weights[i]) && s.lb != nil {
			s.lb.log.Info("server weight set at runtime dropped: its configured weight changed", "backend", name, "server", s.name, "weight", weights[i])
		}
	}
	return &pool{name: name, balance: balance, servers: servers, cw: make([]int, len(servers)), noSrv: new(atomic.Uint64), be: new(backendCounters)}
}

// weight is server i's weight in force.
func (p *pool) weight(i int) int { return int(p.servers[i].weight.cur.Load()) }

// maxTracked is how many servers the per-connection "already tried" set
// covers; servers beyond it may be retried.
const maxTracked = 64

func bit(i int) uint64 {
	if i >= maxTracked {
		return 0
	}
	return 1 << uint(i)
}

// eligible reports whether server i may take a connection.
func (p *pool) eligible(i int, skip uint64) bool {
	return skip&bit(i) == 0 && p.servers[i].usable() && !p.servers[i].full()
}

// pickWeight is server i's weight for one pick: 0 when it may not take
// the connection. A pick reads it once per server, as the runtime API and
// the health checks change weights and states meanwhile: read twice, a
// server could count in a sum and then be skipped (source found no server
// at all), or be picked at weight 0 (roundrobin).
func (p *pool) pickWeight(i int, skip uint64) int {
	if !p.eligible(i, skip) {
		return 0
	}
	w := max(p.weight(i), 0)
	if s := p.servers[i]; s.params.slowstart.Load() > 0 && s.lb != nil {
		w = max(s.slowWeight(w, s.lb.clk.Now()), 1)
	}
	return w
}

// pick chooses an UP server not in skip, by the pool's algorithm, and
// returns its index, or -1 when there is none. client is used by source.
func (p *pool) pick(client netip.Addr, skip uint64) int {
	skip = p.tierSkip(skip)
	switch p.balance {
	case lbconfig.LeastConn:
		return p.pickLeastConn(skip)
	case lbconfig.Source:
		return p.pickSource(client, skip)
	case lbconfig.StaticRR:
		return p.pickStaticRR(skip)
	case lbconfig.First:
		return p.pickFirst(skip)
	case lbconfig.Random:
		return p.pickRandom(skip)
	}
	return p.pickRoundRobin(skip)
}

// pickRoundRobin is nginx's smooth weighted round robin: every eligible
// server gains its weight, the one with the most current weight wins and
// pays the total back. Over any run of W picks (W the total weight) each
// server is picked exactly its weight times, interleaved as evenly as
// possible (weights 5,1,1 give a a b a c a a).
func (p *pool) pickRoundRobin(skip uint64) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	// When a server goes down or comes up, the rotation starts afresh
	// over the servers up, as haproxy's does: current weights left from
	// before would give one server several picks in a row (two servers
	// left after a third went down took 7 and 5 of 12 connections where
	// haproxy gave 6 and 6, TestRealFilesMatchHaproxy).
	var up uint64
	for i, s := range p.servers {
		if s.usable() && p.weight(i) > 0 {
			up |= bit(i)
		}
	}
	if up != p.rrUp {
		clear(p.cw)
		p.rrUp = up
	}
	best, total := -1, 0
	for i := range p.servers {
		w := p.pickWeight(i, skip)
		if w == 0 {
			continue
		}
		p.cw[i] += w
		total += w
		if best < 0 || p.cw[i] > p.cw[best] {
			best = i
		}
	}
	if best >= 0 {
		p.cw[best] -= total
	}
	return best
}

// pickLeastConn picks the eligible server with the fewest current sessions
// per unit of weight, comparing (sessions+1)/weight as haproxy does;
// among equals it starts from a rotating position.
func (p *pool) pickLeastConn(skip uint64) int {
	n := len(p.servers)
	if n == 0 {
		return -1
	}
	start := int(p.rot.Add(1) % uint32(n))
	best := -1
	var bestCur, bestW int64
	for k := 0; k < n; k++ {
		i := (start + k) % n
		w := int64(p.pickWeight(i, skip))
		if w == 0 {
			continue
		}
		cur := p.servers[i].cur.Load() + 1
		// cur/w < bestCur/bestW without division.
		if best < 0 || cur*bestW < bestCur*w {
			best, bestCur, bestW = i, cur, w
		}
	}
	return best
}

// pickSource maps the client address onto the eligible servers as
// haproxy's `balance source` does with its default map-based hashing, so
// that a client lands on the server haproxy would send it to: the
// address (IPv4 as one big-endian word, IPv6 as its four words XORed),
// modulo the total effective weight, indexes a table in which each server
// holds as many slots as its weight, spread as evenly as haproxy spreads
// them.
func (p *pool) pickSource(client netip.Addr, skip uint64) int {
	if p.ring != nil {
		return p.pickRing(hashAddr(client), skip) // hash-type consistent (consistent.go)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.srcMap.build(p, skip)
	if len(m) == 0 {
		return -1
	}
	return int(m[addrWord(client)%uint32(len(m))])
}

// sourceMap is the table pickSource indexes, rebuilt when the servers'
// weights for a pick change (a check, the runtime API, slowstart).
type sourceMap struct {
	gcd     int     // of the configured weights: the table is reduced by it
	weights []int   // the effective weights the table was built for
	table   []int32 // server indexes
	score   []int   // scratch for build
}

// build returns the table for the servers' weights now, rebuilding it if
// they changed. p.mu is held.
func (sm *sourceMap) build(p *pool, skip uint64) []int32 {
	return sm.buildFor(p, func(i int) int { return p.pickWeight(i, skip) })
}

// buildFor is build with server i's weight for the table weight(i).
func (sm *sourceMap) buildFor(p *pool, weight func(i int) int) []int32 {
	n := len(p.servers)
	if len(sm.weights) != n {
		sm.weights, sm.score, sm.table = make([]int, n), make([]int, n), nil
		sm.gcd = 0
		for i := range p.servers {
			sm.gcd = gcd(sm.gcd, p.weight(i))
		}
		sm.gcd = max(sm.gcd, 1)
		for i := range sm.weights {
			sm.weights[i] = -1 // never a weight: the first pick builds
		}
	}
	changed := false
	total := 0
	for i := range p.servers {
		// The effective weight: the weight reduced by the configured
		// weights' common divisor, rounded up.
		w := (weight(i) + sm.gcd - 1) / sm.gcd
		if w != sm.weights[i] {
			sm.weights[i], changed = w, true
		}
		total += w
	}
	if !changed {
		return sm.table
	}
	sm.table = sm.table[:0]
	if total == 0 {
		return nil
	}
	// Each slot goes to the server whose accumulated weight, plus the
	// total, divided by the total, is largest; the first declared among
	// equals. A server that takes a slot pays the total back.
	clear(sm.score)
	for range total {
		best, bestV := -1, 0
		for i, w := range sm.weights {
			if w == 0 {
				continue
			}
			sm.score[i] += w
			if v := (sm.score[i] + total) / total; best < 0 || v > bestV {
				best, bestV = i, v
			}
		}
		sm.table = append(sm.table, int32(best))
		sm.score[best] -= total
	}
	return sm.table
}

func gcd(a, b int) int {
	if b <= 0 {
		return a
	}
	if a <= 0 {
		return b
	}
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// addrWord folds an address into the word haproxy hashes for `balance
// source`: IPv4 as a big-endian word, IPv6 (an IPv4-mapped one too, as a
// socket of family IPv6 gives it) as its four big-endian words XORed.
func addrWord(a netip.Addr) uint32 {
	if a.Is4() {
		b := a.As4()
		return binary.BigEndian.Uint32(b[:])
	}
	b := a.As16()
	var h uint32
	for i := 0; i < 16; i += 4 {
		h ^= binary.BigEndian.Uint32(b[i:])
	}
	return h
}

// hashAddr is 32-bit FNV-1a over the address bytes (IPv4 as 4 bytes, so
// a client is hashed alike over IPv4 and IPv4-mapped IPv6), then mixed so
// that neighbouring addresses spread.
func hashAddr(a netip.Addr) uint32 {
	a = a.Unmap()
	h := uint32(2166136261)
	if a.Is4() {
		b := a.As4()
		for _, c := range b {
			h = (h ^ uint32(c)) * 16777619
		}
	} else {
		b := a.As16()
		for _, c := range b {
			h = (h ^ uint32(c)) * 16777619
		}
	}
	// murmur3 finalizer
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// backendCounters are a backend's session rate, last session and times,
// kept by name over reloads (LB.beCounters), as its noSrv.
type backendCounters struct {
	rate  stats.RateCounter
	last  stats.LastSession
	times stats.SessionTimes
	// picked counts the backend's server selections (haproxy's backend
	// lbtot, cum_lbconn): the times' window.
	picked atomic.Uint64
	// leftTot and leftBin count the clients that left the queue before
	// a server took them, and their bytes: haproxy counts them in the
	// backend's stot and bin, in no server's (measured,
	// TestAbortOnCloseMatchesHaproxy).
	leftTot, leftBin atomic.Uint64
}

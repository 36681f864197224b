package lb

import "math/rand/v2"

// staticRR is balance static-rr's state: haproxy's map of slots (the
// table balance source indexes, each server holding as many slots as its
// weight) and the next slot to try.
type staticRR struct {
	table sourceMap
	next  int
}

// pickStaticRR walks the slot table from where the last pick stopped and
// takes the first server not in skip with a free connection slot, as
// haproxy's static-rr does (lb_map.c). The table holds the servers UP in
// the tier in force, by weight; one that is full keeps its slots and is
// passed over. static-rr has no slow start.
func (p *pool) pickStaticRR(skip uint64) int {
	tier := p.tierSkip(0)
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.static.table.buildFor(p, func(i int) int {
		if tier&bit(i) != 0 || !p.servers[i].usable() {
			return 0
		}
		return max(p.weight(i), 0)
	})
	n := len(m)
	if n == 0 {
		return -1
	}
	start := p.static.next % n
	for k := range n {
		i := int(m[(start+k)%n])
		if skip&bit(i) == 0 && !p.servers[i].full() {
			p.static.next = (start + k + 1) % n
			return i
		}
	}
	return -1
}

// pickFirst takes the server with the lowest id (its place in the
// backend without one) that may take the connection: below its maxconn,
// UP, weight above 0, not in skip (haproxy's balance first).
func (p *pool) pickFirst(skip uint64) int {
	best, bestID := -1, int64(0)
	for i, s := range p.servers {
		if p.pickWeight(i, skip) == 0 {
			continue
		}
		id := s.params.id.Load()
		if id <= 0 {
			id = int64(i) + 1
		}
		if best < 0 || id < bestID {
			best, bestID = i, id
		}
	}
	return best
}

// pickRandom draws two servers at random, each with a chance in
// proportion to its weight, and takes the one with fewer connections per
// unit of weight, the first drawn among equals (haproxy 2.6's balance
// random, whose draws default to 2, lb_chash.c).
func (p *pool) pickRandom(skip uint64) int {
	var ws [maxTracked]int
	weights := ws[:0]
	if len(p.servers) > maxTracked {
		weights = make([]int, 0, len(p.servers))
	}
	total := 0
	for i := range p.servers {
		w := p.pickWeight(i, skip)
		weights = append(weights, w)
		total += w
	}
	if total == 0 {
		return -1
	}
	draw := func() int {
		r := rand.IntN(total)
		for i, w := range weights {
			if r < w {
				return i
			}
			r -= w
		}
		return len(weights) - 1
	}
	a, b := draw(), draw()
	ca, cb := p.servers[a].cur.Load(), p.servers[b].cur.Load()
	if cb*int64(weights[a]) < ca*int64(weights[b]) {
		return b
	}
	return a
}

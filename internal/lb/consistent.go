package lb

import (
	"hash/fnv"
	"slices"
	"strconv"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// hash-type consistent: the servers of a backend are points on a ring
// of 32-bit hashes, pointsPerWeight per unit of weight, each named after
// its server; a client goes to the first point at or after its address's
// hash whose server may take it. A server going DOWN, or coming back,
// moves only the clients of its own points, as haproxy's consistent
// hashing does. The points are not haproxy's (which hashes server ids
// with its own functions): which server a given client lands on differs
// from haproxy's; the stability is the same.

// pointsPerWeight is how many ring points a unit of weight gives.
const pointsPerWeight = 16

type ringPoint struct {
	hash   uint32
	server int // index in the pool
}

// newRing is b's ring, nil unless b has hash-type consistent.
func newRing(b lbconfig.Backend) []ringPoint {
	if b.HashType != "consistent" {
		return nil
	}
	var ring []ringPoint
	for i, s := range b.Servers {
		w := max(s.Weight, 1)
		for j := 0; j < w*pointsPerWeight; j++ {
			h := fnv.New32a()
			h.Write([]byte(s.Name + "#" + strconv.Itoa(j)))
			ring = append(ring, ringPoint{hash: mix32(h.Sum32()), server: i})
		}
	}
	slices.SortFunc(ring, func(a, b ringPoint) int {
		switch {
		case a.hash < b.hash:
			return -1
		case a.hash > b.hash:
			return 1
		}
		return a.server - b.server
	})
	return ring
}

// mix32 is murmur3's finalizer, spreading FNV's output.
func mix32(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// pickRing is the server of the first point at or after hash, going
// round, whose server may take the connection; -1 when none may. The
// runtime weight (0 or not) decides only whether a server takes
// connections, as its points stay.
func (p *pool) pickRing(hash uint32, skip uint64) int {
	skip = p.tierSkip(skip)
	n := len(p.ring)
	start, _ := slices.BinarySearchFunc(p.ring, hash, func(pt ringPoint, h uint32) int {
		switch {
		case pt.hash < h:
			return -1
		case pt.hash > h:
			return 1
		}
		return 0
	})
	for k := 0; k < n; k++ {
		pt := p.ring[(start+k)%n]
		if p.pickWeight(pt.server, skip) > 0 {
			return pt.server
		}
	}
	return -1
}

package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestLineSet: the set answers as a map of the same lines would, through
// adds that stay in its map and those that make it sort them into its
// text, and compares equal to a list of exactly its lines in any order.
func TestLineSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	line := func(i int) string { return fmt.Sprintf("198.18.%d.%d/32 dev eth%d", i/250, i%250, i%3) }
	model := map[string]bool{}
	var s lineSet
	for step := range 3000 {
		k := line(rng.IntN(1200))
		s.add(k)
		model[k] = true
		if step%97 == 0 {
			for i := range 1200 {
				k := line(i)
				if s.has(k) != model[k] || s.hasBytes([]byte(k)) != model[k] {
					t.Fatalf("step %d: has(%q) = %v, hasBytes %v, want %v", step, k, s.has(k), s.hasBytes([]byte(k)), model[k])
				}
			}
			if s.len() != len(model) {
				t.Fatalf("step %d: len %d, want %d", step, s.len(), len(model))
			}
		}
	}
	if len(s.more) >= len(model) {
		t.Errorf("all %d lines still in the map: never sorted into the text", len(model))
	}
	var lines []string
	for k := range model {
		lines = append(lines, k, k) // repeats count once
	}
	if !s.equal(lines) {
		t.Error("not equal to a list of its lines")
	}
	if s.equal(lines[2:]) {
		t.Error("equal to a list that lacks one of its lines")
	}
	if s.equal(append(lines, "fd00::1/128 dev eth0")) {
		t.Error("equal to a list with a line it lacks")
	}
	empty := lineSetOf(nil)
	if empty.has("") || empty.len() != 0 || !empty.equal(nil) {
		t.Error("the empty set has a line")
	}
	kb := []byte(line(5))
	if n := testing.AllocsPerRun(100, func() { s.hasBytes(kb) }); n != 0 {
		t.Errorf("hasBytes allocates %v times", n)
	}
}

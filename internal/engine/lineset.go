package engine

import (
	"slices"
	"sort"
	"strings"
)

// lineSet is a set of texts (the ledger's lines) kept as one string of
// them sorted and back to back, with where each ends, and the texts added
// since in a map until they are a quarter as many. A map of 10,000 lines
// took about 430 KB beside the texts, kept by a node of 10,000 VIPs for
// its life; the ends take 4 bytes a line (docs/design/memory.md).
type lineSet struct {
	text string   // the lines sorted, each once
	ends []uint32 // ends[i]: where line i of text ends
	more map[string]bool
}

// lineSetOf returns the set of lines.
func lineSetOf(lines []string) lineSet {
	var s lineSet
	s.rebuild(lines)
	return s
}

// line returns line i of text.
func (s *lineSet) line(i int) string {
	from := uint32(0)
	if i > 0 {
		from = s.ends[i-1]
	}
	return s.text[from:s.ends[i]]
}

func (s *lineSet) has(k string) bool {
	if s.more[k] {
		return true
	}
	i := sort.Search(len(s.ends), func(i int) bool { return s.line(i) >= k })
	return i < len(s.ends) && s.line(i) == k
}

// hasBytes is has for a line in a buffer: it allocates nothing (the
// compiler converts k without a copy for a comparison or a map index).
func (s *lineSet) hasBytes(k []byte) bool {
	if s.more[string(k)] {
		return true
	}
	i := sort.Search(len(s.ends), func(i int) bool { return s.line(i) >= string(k) })
	return i < len(s.ends) && s.line(i) == string(k)
}

// add puts k in the set.
func (s *lineSet) add(k string) {
	if s.has(k) {
		return
	}
	if s.more == nil {
		s.more = map[string]bool{}
	}
	s.more[k] = true
	if len(s.more) > max(64, len(s.ends)/4) {
		lines := make([]string, 0, len(s.ends)+len(s.more))
		for i := range s.ends {
			lines = append(lines, s.line(i))
		}
		for k := range s.more {
			lines = append(lines, k)
		}
		s.rebuild(lines)
	}
}

// len is how many lines the set holds.
func (s *lineSet) len() int { return len(s.ends) + len(s.more) }

// equal reports whether the set holds lines and no other line.
func (s *lineSet) equal(lines []string) bool {
	o := lineSetOf(lines)
	if o.len() != s.len() {
		return false
	}
	for i := range o.ends {
		if !s.has(o.line(i)) {
			return false
		}
	}
	return true
}

// rebuild makes s the set of lines (in any order, repeats allowed).
func (s *lineSet) rebuild(lines []string) {
	lines = slices.Clone(lines)
	slices.Sort(lines)
	lines = slices.Compact(lines)
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	var b strings.Builder
	b.Grow(n)
	ends := make([]uint32, len(lines))
	for i, l := range lines {
		b.WriteString(l)
		ends[i] = uint32(b.Len())
	}
	s.text, s.ends, s.more = b.String(), ends, nil
}

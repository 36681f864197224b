package main

// tracker counts the moves of one VIP from the holders sampled over time:
// a move is a sole holder other than the last sole holder. A sample with
// no holder or with several (during a move) counts apart.
type tracker struct {
	last    string // the last sole holder; "" before the first
	Moves   int
	Path    []string // sole holders in order, the first included
	None    int      // samples with no holder
	Several int      // samples with more than one holder
}

// add records one sample's holders.
func (t *tracker) add(holders []string) {
	switch len(holders) {
	case 0:
		t.None++
		return
	case 1:
	default:
		t.Several++
		return
	}
	h := holders[0]
	if h == t.last {
		return
	}
	if t.last != "" {
		t.Moves++
	}
	t.last = h
	t.Path = append(t.Path, h)
}

package keepalived

import "testing"

// TestInList: words separated by spaces or ", ", found whole, and no
// allocation (it runs for every keyword of a file).
func TestInList(t *testing.T) {
	for _, tc := range []struct {
		list, word string
		want       bool
	}{
		{list: "global site link host nowhere", word: "link", want: true},
		{list: "global site link host nowhere", word: "lin"},
		{list: "reverse, noreverse,no_reverse", word: "noreverse", want: true},
		{list: "reverse, noreverse,no_reverse", word: "no_reverse", want: true},
		{list: "reverse, noreverse", word: ""},
		{list: "", word: "x"},
	} {
		if got := inList(tc.list, tc.word); got != tc.want {
			t.Errorf("inList(%q, %q) = %v, want %v", tc.list, tc.word, got, tc.want)
		}
	}
	if allocs := testing.AllocsPerRun(20, func() { inList(lvsKeywords, "virtual_server") }); allocs != 0 {
		t.Errorf("inList: %v allocations, want 0", allocs)
	}
}

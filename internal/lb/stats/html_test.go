package stats

import "testing"

// TestStatsPageNumbers checks the stats page's number and time forms
// against haproxy 2.6.12's (measured where the comparison with haproxy
// reaches them, TestStatsPageMatchesHaproxy: 9984 and 2000 grouped).
func TestStatsPageNumbers(t *testing.T) {
	for n, want := range map[uint64]string{
		0: "0", 999: "999", 2000: `<span class="rls">2</span>000`, 9984: `<span class="rls">9</span>984`,
		1234567: `<span class="rls">1</span>23<span class="rls">4</span>567`,
	} {
		if got := htmlNumber(n); got != want {
			t.Errorf("htmlNumber(%d) = %q, want %q", n, got, want)
		}
	}
	for s, want := range map[uint64]string{0: "0s", 59: "59s", 60: "1m", 61: "1m1s", 3600: "1h", 3661: "1h1m",
		86400: "1d", 86405: "1d5s", 90061: "1d1h"} {
		if got := humanTime(s); got != want {
			t.Errorf("humanTime(%d) = %q, want %q", s, got, want)
		}
	}
}

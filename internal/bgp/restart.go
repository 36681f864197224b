package bgp

import "time"

// Restart delays of a speaker that stopped on its own (its start or a
// peer's addition failed): a runner that starts another waits
// RestartDelay(n) after the n-th stop in a row, so a failure that
// repeats costs a start every half minute, not a loop. A speaker that
// ran RestartReset or longer before it stopped begins a new series.
const (
	restartFirst = time.Second
	restartMax   = 30 * time.Second
	RestartReset = time.Minute
)

// RestartDelay is the wait before the next start after failures stops
// in a row (0 for the first): 1 s, doubling, at most 30 s.
func RestartDelay(failures int) time.Duration {
	d := restartFirst
	for range failures {
		if d *= 2; d >= restartMax {
			return restartMax
		}
	}
	return d
}

package track

// Hysteresis is keepalived's rise/fall rule for a tracked script, without
// clocks or I/O.
//
// keepalived keeps one counter per script in 0..rise+fall-1; OK is
// counter >= rise. A success while failing counts up, a failure while OK
// counts down, and a result that agrees with the current state resets the
// counter to its extreme. That is the same as counting consecutive results:
//
//   - while OK, fall consecutive failures make it failing; any success resets
//     the failure count;
//   - while failing, rise consecutive successes make it OK; any failure
//     resets the success count.
//
// The initial state is keepalived's too. With init_fail the script starts
// failing and needs rise successes. Without it, keepalived starts the
// counter at rise-1 in an "init" state ("one success is enough") and reports
// the very first failure at once: the first result decides, whatever rise
// and fall are. Hysteresis models that as OK with Pending set until the
// first Observe; a first failure flips to failing.
type Hysteresis struct {
	rise, fall          int
	ok, pending         bool
	successes, failures int
}

// NewHysteresis returns the initial state. rise and fall below 1 mean 1,
// keepalived's default for both.
func NewHysteresis(rise, fall int, initFail bool) *Hysteresis {
	return &Hysteresis{rise: max(rise, 1), fall: max(fall, 1), ok: !initFail, pending: !initFail}
}

// ResumeHysteresis returns the state of a check redefined on a reload that
// carries over ok from the one it replaces, as keepalived 2.2.7 does
// ("VRRP_Script(chk) considered unsuccessful on reload"): not pending, so
// a carried-over success needs fall failures to flip and a carried-over
// failure rise successes, whatever the new definition's first result.
func ResumeHysteresis(rise, fall int, ok bool) *Hysteresis {
	return &Hysteresis{rise: max(rise, 1), fall: max(fall, 1), ok: ok}
}

// Observe records one probe result and reports whether OK flipped.
func (h *Hysteresis) Observe(success bool) (changed bool) {
	first := h.pending
	h.pending = false
	if success {
		h.successes++
		h.failures = 0
		if !h.ok && h.successes >= h.rise {
			h.ok = true
			return true
		}
		return false
	}
	h.failures++
	h.successes = 0
	if h.ok && (first || h.failures >= h.fall) {
		h.ok = false
		return true
	}
	return false
}

// OK reports whether the check is up.
func (h *Hysteresis) OK() bool { return h.ok }

// Pending reports whether nothing has been observed yet in the default
// (not init_fail) start state, keepalived's "INIT" script state.
func (h *Hysteresis) Pending() bool { return h.pending }

// Successes is the number of consecutive successes, 0 after a failure.
func (h *Hysteresis) Successes() int { return h.successes }

// Failures is the number of consecutive failures, 0 after a success.
func (h *Hysteresis) Failures() int { return h.failures }

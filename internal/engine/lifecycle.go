package engine

import "strings"

// cond is a named condition of an instance's lifecycle, beside its fsm
// state: what keeps it from running as configured, or is to happen to it.
// An instance holds a set of them (life); none held is a running instance.
type cond uint8

const (
	// condAbsent: a placeholder for an instance whose interface did not
	// exist when it was built: no socket, no announcer, in FAULT until
	// checkAbsent finds the interface and apply builds the real one.
	condAbsent cond = 1 << iota
	// condRecreated: the interface was deleted and created again (another
	// index); the socket membership and announcer point at the old one, so
	// apply builds the instance anew.
	condRecreated
	// condWaiting: held in INIT until the first result of a weight-0
	// tracked script (see waits), with its sync group.
	condWaiting
	// condNoSource: no address to send from (the interface lost its
	// primary IPv4 or link-local address; see checkPrimaries): FAULT.
	condNoSource
	// condGroupFault: another member of the sync group is in fault: FAULT.
	condGroupFault

	condCount = iota
)

var condNames = [condCount]string{"absent", "recreated", "waiting", "no-source", "group-fault"}

// life is an instance's lifecycle state: the conditions it holds, each
// with the reason it holds. It changes only through Engine.setCond.
type life struct {
	conds cond
	why   [condCount]string
}

func (l life) has(c cond) bool { return l.conds&c != 0 }

// reason is why c holds ("" when it does not).
func (l life) reason(c cond) string {
	for i := range condCount {
		if c == 1<<i && l.has(c) {
			return l.why[i]
		}
	}
	return ""
}

// names lists the conditions held, in declaration order.
func (l life) names() []string {
	var out []string
	for i := range condCount {
		if l.has(1 << i) {
			out = append(out, condNames[i])
		}
	}
	return out
}

// String is the set of conditions held ("running" when none), as the log
// shows it.
func (l life) String() string {
	if l.conds == 0 {
		return "running"
	}
	return strings.Join(l.names(), "+")
}

// setCond sets (on) or clears condition c of in's lifecycle for why, and
// logs the change as fsm transitions are logged: the instance, the
// lifecycle before and after, and the reason. Setting a held condition
// again with another reason updates the reason (and logs it); anything
// else that changes nothing is not logged. It reports whether the set of
// conditions changed.
func (e *Engine) setCond(in *instance, c cond, on bool, why string) bool {
	from := in.life
	i := 0
	for c != 1<<i {
		i++
	}
	if on {
		in.life.conds |= c
		in.life.why[i] = why
	} else {
		in.life.conds &^= c
		in.life.why[i] = ""
	}
	if in.life == from {
		return false
	}
	e.log.Info("instance lifecycle changed", "instance", in.cfg.Name, "from", from.String(), "to", in.life.String(), "reason", why)
	return in.life.conds != from.conds
}

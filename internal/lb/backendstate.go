package lb

import "time"

// beState is a backend's UP/DOWN history: DOWN while none of its servers
// is usable (UP, ready and of a weight above 0), as haproxy's backend
// status. It changes only under LB.usableMu, where every change of a
// server's usability counts the backend's usable servers (noteUsable),
// and is kept over reloads by backend name.
type beState struct {
	since     time.Time     // the last UP/DOWN change, or the backend's creation
	downSince time.Time     // when it went DOWN; zero while UP
	downtime  time.Duration // total time DOWN before downSince
	downs     uint64        // UP to DOWN changes (haproxy's chkdown of a backend)
}

// noteUsable records that backend has after usable servers now; l.usableMu
// is held. A backend goes DOWN when its last usable server stops being one
// and UP when one is again, whatever moved it: a check, the runtime API's
// state or weight, or a reload. haproxy 2.6.12 counts the same changes in
// its backends' chkdown and lastchg (measured: a check's DOWN, MAINT, and
// weight 0 of the last server each count one), but adds a DOWN period to
// downtime only when a check brings a server back, not when leaving MAINT
// or a weight change ends it (measured: downtime 4 in MAINT, 2 after
// `set server ... state ready`); vipstack adds every DOWN period.
func (l *LB) noteUsable(backend string, after int) {
	if l.opts.OnServers != nil {
		l.opts.OnServers()
	}
	st := l.beStates[backend]
	if st == nil {
		return
	}
	down := after == 0
	if down == st.down() {
		return
	}
	now := l.clk.Now()
	if down {
		st.downs++
		st.downSince = now
	} else {
		st.downtime += now.Sub(st.downSince)
		st.downSince = time.Time{}
	}
	st.since = now
}

// down says whether the backend is DOWN.
func (st *beState) down() bool { return !st.downSince.IsZero() }

// applyBackendStates keeps the states of the backends of v, the view a
// reload just put in force, creates those of new backends (DOWN from the
// start when no server is usable, without counting a change) and brings
// each up to date with its servers; l.usableMu is held.
func (l *LB) applyBackendStates(v *view) {
	states := make(map[string]*beState, len(v.pools))
	now := l.clk.Now()
	for _, p := range v.pools {
		n := l.usableServers(p.name)
		st := l.beStates[p.name]
		if st == nil {
			st = &beState{since: now}
			if n == 0 {
				st.downSince = now
			}
		}
		states[p.name] = st
	}
	l.beStates = states
	for _, p := range v.pools {
		l.noteUsable(p.name, l.usableServers(p.name))
	}
}

// backendState reads backend's history at now: its DOWN changes, the
// seconds since its last change and its total time DOWN.
func (l *LB) backendState(backend string, now time.Time) (downs uint64, lastChange, downtime int64, ok bool) {
	l.usableMu.Lock()
	defer l.usableMu.Unlock()
	st := l.beStates[backend]
	if st == nil {
		return 0, 0, 0, false
	}
	down := st.downtime
	if st.down() {
		down += now.Sub(st.downSince)
	}
	return st.downs, int64(now.Sub(st.since) / time.Second), int64(down / time.Second), true
}

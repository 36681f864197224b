package engine

import "time"

// When a master hears a router of lower priority advertise as master (the
// backups of a master that left, timing out together at equal priority; a
// healed partition), that router has taken the VIPs too and announced them
// with its own MAC address. It steps down once it hears our reply, but the
// announcements it sends until then may reach the hosts after ours, and a
// host then sends to it, which no longer holds the VIP, until our next
// announcement: garp_master_delay's second burst, 5 s by default. The demo
// hit this when three masters took the DNS VIP at once: the client's DNS
// queries went to a master that had stepped down, for 4.2 s.
//
// So the master announces at once (at most once a second, as before) and
// once more reannounceSettle after the last such advertisement, when the
// router that sent it has heard us and stopped announcing. An advertisement
// during the wait moves the follow-up later, so a router that keeps
// advertising gets one announcement a second, not one per advertisement.

// reannounceSettle is how long after the last lower-priority master's
// advertisement the follow-up announcement goes out: that router steps down
// when our advertisement, sent the moment we heard it, arrives.
const reannounceSettle = 100 * time.Millisecond

// reannounceEvery bounds the immediate announcements.
const reannounceEvery = time.Second

// reannouncer decides when a master announces its VIPs again because of
// other routers' advertisements. The zero value is ready.
type reannouncer struct {
	last time.Time // the last immediate announcement
	due  time.Time // the follow-up; zero when none is due
}

// heard records an advertisement from a router of lower priority that
// advertises as master; it reports whether to announce at once.
func (r *reannouncer) heard(now time.Time) bool {
	r.due = now.Add(reannounceSettle)
	if !r.last.IsZero() && now.Sub(r.last) < reannounceEvery {
		return false
	}
	r.last = now
	return true
}

// fire reports whether the follow-up is due at now, and clears it if so.
func (r *reannouncer) fire(now time.Time) bool {
	if r.due.IsZero() || now.Before(r.due) {
		return false
	}
	r.due = time.Time{}
	return true
}

// deadline is when the follow-up is due; zero when none is.
func (r *reannouncer) deadline() time.Time { return r.due }

// cancel drops the follow-up (on leaving master).
func (r *reannouncer) cancel() { r.due = time.Time{} }

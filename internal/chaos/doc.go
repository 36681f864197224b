// Package chaos plans and judges chaos runs against a vipstack cluster: a
// seeded, bounded schedule of faults (Generate) and an invariant checker
// (Check) fed with samples taken from outside the nodes.
//
// The invariants are those of VRRP as RFC 5798 defines it (section 6.4:
// one Master per virtual router on a working LAN; a Backup takes over
// after Master_Down_Interval = 3 x Advertisement_Interval + Skew_Time)
// plus vipstack's own promise that a dead engine leaves nothing behind:
//
//   - SplitBrain: two holders of a VIP, outside partition windows, for
//     longer than a handover grace.
//   - NoHolder: after a fault begins or ends, a VIP held by no eligible
//     node for longer than 3 x advert + skew + a margin.
//   - Leftover: a VIP or an nftables table of vipstack's on a node whose
//     engine is not running, past the bound the design allows (the
//     supervisor's reaction after an engine crash; the next start's sweep
//     after the whole agent died).
//   - Exit (not an invariant, never acceptable): an engine or agent that
//     died with no kill to explain it.
//   - Stale (Kubernetes agents): the address of a deleted Service still
//     held, past a bound, by a node whose agent can act; and (NoHolder)
//     the address of a Service created again not held within that bound.
//
// Config documents each window and margin exactly, and docs/reliability.md
// explains them. Nothing here touches the system; bench/chaos runs the
// schedule and takes the samples.
package chaos

// Package fsm is the state machine of one VRRP virtual router, as described
// in RFC 5798 section 6.4 (and RFC 3768 section 6.4 for version 2), with the
// keepalived extensions vipstack must honour: nopreempt, preempt_delay,
// and the FAULT state driven by tracked scripts and interfaces
// (keepalived's `state MASTER` does not change the start: see Start).
//
// The machine is pure: it never reads a clock, opens a socket or touches an
// address. Callers feed it events with the current time and carry out the
// actions it returns (send an advertisement, take or release the VIPs), and
// ask NextDeadline when to call Tick again. Every transition carries a
// human-readable reason so the daemon can log why it happened.
//
// Deviations from the RFC, each chosen to fail over faster without a second
// master:
//   - A master that hears a lower priority advertisement answers at once
//     with its own (keepalived does the same), so a healed partition
//     converges within one packet exchange.
//   - A preempting backup that hears the current master advertise a priority
//     lower than its own takes over after Skew_Time, the same wait the RFC
//     uses after a priority-0 advertisement, instead of the whole
//     Master_Down_Interval: Skew_Time is shorter for higher priorities, so
//     the best backup moves first and the others hear it before their own
//     skew expires.
package fsm

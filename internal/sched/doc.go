// Package sched sets the scheduling of the VRRP process the way
// keepalived's global_defs ask it to (vrrp_rt_priority, vrrp_priority,
// vrrp_no_swap, vrrp_rlimit_rttime): OpenShift's current keepalived
// template sets them so that a node short of CPU still sends its adverts
// in time, rather than letting a backup take the VIP beside a live master.
//
// A Go process has many threads, and the runtime starts more whenever it
// needs them. Process sets every thread it finds, and a thread the kernel
// starts later inherits the policy of the thread that starts it, so every
// thread of the runtime stays at the priority asked for. Child processes
// (scripts) must not inherit it, as keepalived's do not: Process starts
// them from a thread of its own whose policy carries
// SCHED_FLAG_RESET_ON_FORK, and the Go runtime starts new threads from a
// template thread, never from a thread a goroutine is locked to.
package sched

// DefaultRLimitRTTime is keepalived's vrrp_rlimit_rttime when
// vrrp_rt_priority is set and vrrp_rlimit_rttime is not (microseconds).
const DefaultRLimitRTTime = 10000

// Tuning is what to apply; the zero value is the kernel's default
// (SCHED_OTHER at nice 0, nothing locked, no RLIMIT_RTTIME).
type Tuning struct {
	// RTPriority is the SCHED_RR priority (1..99) of every thread of the
	// process; 0 is SCHED_OTHER.
	RTPriority int
	// Nice is the nice value (-20..19) of every thread under SCHED_OTHER
	// (vrrp_priority; keepalived ignores it when RTPriority is set, and
	// so does Apply).
	Nice int
	// NoSwap locks the process's memory (mlockall, current and future
	// pages, each as it is first touched: MCL_ONFAULT; a Go process
	// reserves far more address space than it uses, and locking it all at
	// once took the engine from 41 MB to 192 MB resident, measured).
	NoSwap bool
	// RLimitRTTime is RLIMIT_RTTIME's hard limit in microseconds, the CPU
	// time a realtime thread may use without blocking before the kernel
	// kills the process (the supervisor then restarts it); the soft limit
	// is half of it, at which the kernel sends SIGXCPU once. 0 is no limit.
	// See ForVRRP for keepalived's rules.
	RLimitRTTime int
}

// ForVRRP is the tuning keepalived 2.2.7 gives its VRRP process for the
// global_defs values rtPriority (0: not set), nice (vrrp_priority),
// noSwap and rlimitRTTime (0: not set). Measured on keepalived 2.2.7:
// RLIMIT_RTTIME is set only with a realtime priority, to
// DefaultRLimitRTTime unless rlimitRTTime says otherwise, soft at half the
// hard limit and the hard limit at least 2 us (vrrp_rlimit_rttime 1 gives
// 1/2); vrrp_priority changes nothing under a realtime priority.
func ForVRRP(rtPriority, nice int, noSwap bool, rlimitRTTime int) Tuning {
	t := Tuning{RTPriority: rtPriority, NoSwap: noSwap}
	if rtPriority == 0 {
		t.Nice = nice
		return t
	}
	t.RLimitRTTime = DefaultRLimitRTTime
	if rlimitRTTime > 0 {
		t.RLimitRTTime = max(rlimitRTTime, 2)
	}
	return t
}

// softRTTime is the soft RLIMIT_RTTIME for hard limit us, keepalived's.
func softRTTime(us int) int { return max(us/2, 1) }

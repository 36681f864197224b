// Package sched sets the scheduling of the VRRP process the way
// keepalived's global_defs ask it to (vrrp_rt_priority, vrrp_no_swap,
// vrrp_rlimit_rttime): OpenShift's current keepalived template sets them
// so that a node short of CPU still sends its adverts in time, rather than
// letting a backup take the VIP beside a live master.
package sched

// Tuning is what to apply; the zero value is the kernel's default
// (SCHED_OTHER, nothing locked, no RLIMIT_RTTIME).
type Tuning struct {
	// RTPriority is the SCHED_RR priority (1..99) of every thread of the
	// process; 0 is SCHED_OTHER.
	RTPriority int
	// NoSwap locks the process's memory (mlockall, current and future
	// pages, each as it is first touched: MCL_ONFAULT; a Go process
	// reserves far more address space than it uses, and locking it all at
	// once took the engine from 41 MB to 192 MB resident, measured).
	NoSwap bool
	// RLimitRTTime is RLIMIT_RTTIME in microseconds, soft and hard: the
	// CPU time a realtime thread may use without blocking before the
	// kernel kills the process (the supervisor then restarts it); 0 is no
	// limit.
	RLimitRTTime int
}

// Package cpusched asks the kernel's CPU scheduler for a shorter time
// slice for every thread of this process: the EEVDF scheduler of Linux
// 6.12 and later takes a SCHED_OTHER thread's sched_runtime
// (sched_setattr(2)) as its requested slice, and a task asking for a short
// slice gets an earlier virtual deadline, so it runs sooner after it wakes
// on a busy CPU. A server that answers in microseconds (vipstack dns) waits
// less behind a CPU-bound neighbour; see docs/design/dns.md.
package cpusched

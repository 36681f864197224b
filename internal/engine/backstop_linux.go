//go:build linux

package engine

import (
	"context"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/vrrp/transport"
)

// realBackstopSeams are the backstop's sockets (send-only raw sockets),
// its sleep (clock_nanosleep, whose timer is armed on the calling
// thread's CPU) and the CPUs it pins its threads to (those the process
// may run on, read once: unpin gives a thread back that set, the one
// every thread the runtime starts inherits).
func realBackstopSeams() backstopSeams {
	var allowed unix.CPUSet
	allowedErr := unix.SchedGetaffinity(0, &allowed)
	return backstopSeams{
		listen: transport.ListenSend,
		sleep: func(_ context.Context, d time.Duration) {
			ts := unix.NsecToTimespec(int64(d))
			for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, 0, &ts, &ts) == unix.EINTR {
			}
		},
		cpus: allowedCPUs,
		pin: func(cpu int) (func() error, error) {
			if allowedErr != nil {
				return nil, allowedErr
			}
			var set unix.CPUSet
			set.Set(cpu)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				return nil, err
			}
			return func() error { return unix.SchedSetaffinity(0, &allowed) }, nil
		},
	}
}

// allowedCPUs are the CPUs this thread may run on, in order.
func allowedCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var cpus []int
	for i := range len(set) * 64 {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus
}

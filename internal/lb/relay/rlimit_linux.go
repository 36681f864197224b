package relay

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// RaiseFileLimit raises the soft limit on open files to the hard limit:
// each proxied connection holds two sockets, and up to two pipes while
// data moves. It returns the limits now in force.
func RaiseFileLimit() (soft, hard uint64, err error) {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil {
		return 0, 0, fmt.Errorf("getrlimit(RLIMIT_NOFILE): %w", err)
	}
	if r.Cur < r.Max {
		r.Cur = r.Max
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &r); err != nil {
			return r.Cur, r.Max, fmt.Errorf("setrlimit(RLIMIT_NOFILE, %d): %w", r.Max, err)
		}
	}
	return r.Cur, r.Max, nil
}

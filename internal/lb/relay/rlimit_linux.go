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

// SetFileLimit sets the limit on open files to n, soft and hard, as
// haproxy's `ulimit-n` does; where the hard limit may not rise (no
// privilege), the soft one goes as high as the hard one allows. It
// returns the limits now in force.
func SetFileLimit(n uint64) (soft, hard uint64, err error) {
	r := unix.Rlimit{Cur: n, Max: n}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &r); err == nil {
		return n, n, nil
	}
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil {
		return 0, 0, fmt.Errorf("getrlimit(RLIMIT_NOFILE): %w", err)
	}
	r.Cur = min(n, r.Max)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &r); err != nil {
		return r.Cur, r.Max, fmt.Errorf("setrlimit(RLIMIT_NOFILE, %d): %w", r.Cur, err)
	}
	if r.Cur < n {
		return r.Cur, r.Max, fmt.Errorf("cannot raise FD limit to %d, limit is %d", n, r.Cur)
	}
	return r.Cur, r.Max, nil
}

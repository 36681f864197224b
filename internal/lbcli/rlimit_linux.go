package lbcli

import "golang.org/x/sys/unix"

// openFilesLimit is the soft limit on open files, `show info`'s
// Ulimit-n.
func openFilesLimit() (uint64, bool) {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil {
		return 0, false
	}
	return r.Cur, true
}

package testnet

import "golang.org/x/sys/unix"

// waitExited returns once the child pid has exited (or was reaped
// already), without reaping it: whoever calls Wait still gets its status.
func waitExited(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return // exited, or already reaped (ECHILD)
		}
	}
}

package lb

import (
	"net"

	"golang.org/x/sys/unix"
)

// socketPair returns a connected pair of stream sockets: the loop's end
// (non-blocking, for the event loops) and this side's, for Go.
func socketPair() (int, *net.UnixConn, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, nil, err
	}
	uc, err := socketPairFile(fds[1])
	if err != nil {
		unix.Close(fds[0])
		return -1, nil, err
	}
	return fds[0], uc, nil
}

// peerClosed reports whether the other end of c has closed the socket
// altogether (POLLHUP), not only shut down its writing.
func peerClosed(c *net.UnixConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return true
	}
	hup := false
	rc.Control(func(fd uintptr) {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		if n, err := unix.Poll(p, 0); err == nil && n > 0 && p[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0 {
			hup = true
		}
	})
	return hup
}

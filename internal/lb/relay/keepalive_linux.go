package relay

import "golang.org/x/sys/unix"

// SetKeepAlive turns TCP keep-alives on for the socket fd, with the
// system's timings, as haproxy's `option tcpka` does.
func SetKeepAlive(fd int) error {
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1)
}

// KeepAlive reports whether SO_KEEPALIVE is on for fd.
func KeepAlive(fd int) (bool, error) {
	v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE)
	return v != 0, err
}

//go:build linux

package transport

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// Queued reports whether a packet waits in the socket's receive queue,
// received by the kernel and not read yet. A backup asks before it takes
// over on its Master_Down timer: the timer and the socket's reader run
// on different threads, and a timer taken an instant before the reader
// would act on a silence that a queued advertisement has already ended.
func (c *conn4) Queued() (bool, error) { return queued(c.r.rc, 4) }

// Queued is conn4's Queued for IPv6.
func (c *conn6) Queued() (bool, error) { return queued(c.r.rc, 6) }

// queued asks the kernel for the size of the next packet queued on rc
// (SIOCINQ; 0 when none is).
func queued(rc syscall.RawConn, family int) (bool, error) {
	var n int
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.SIOCINQ) }); err != nil {
		return false, &OpError{Op: "queued", Family: family, Err: err}
	}
	if ierr != nil {
		return false, &OpError{Op: "queued (SIOCINQ)", Family: family, Err: ierr}
	}
	return n > 0, nil
}

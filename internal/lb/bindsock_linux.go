package lb

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// setBindSock sets s's options on a socket before it binds, with the
// values haproxy 2.6 sets (proto_tcp.c, sock_inet.c): TCP_DEFER_ACCEPT
// of 1 s, TCP_FASTOPEN of queue, SO_BINDTODEVICE, IP(V6)_TRANSPARENT.
func setBindSock(network string, c syscall.RawConn, s lbconfig.BindSock, queue int) error {
	var err error
	cerr := c.Control(func(fd uintptr) {
		set := func(what string, level, opt, v int) {
			if err == nil {
				if e := unix.SetsockoptInt(int(fd), level, opt, v); e != nil {
					err = fmt.Errorf("bind %s: %w", what, os.NewSyscallError("setsockopt", e))
				}
			}
		}
		if s.Interface != "" {
			if e := unix.BindToDevice(int(fd), s.Interface); e != nil {
				err = fmt.Errorf("bind interface %s: %w (accepted: an interface of this network namespace)", s.Interface, os.NewSyscallError("setsockopt", e))
			}
		}
		if s.Transparent {
			if network == "tcp4" {
				set("transparent", unix.IPPROTO_IP, unix.IP_TRANSPARENT, 1)
			} else {
				set("transparent", unix.IPPROTO_IPV6, unix.IPV6_TRANSPARENT, 1)
			}
		}
		if s.DeferAccept {
			set("defer-accept", unix.IPPROTO_TCP, unix.TCP_DEFER_ACCEPT, 1)
		}
		if s.TFO {
			set("tfo", unix.IPPROTO_TCP, unix.TCP_FASTOPEN, queue)
		}
	})
	if cerr != nil {
		return cerr
	}
	return err
}

// listenAgain calls listen(2) again on a listening socket with backlog n.
func listenAgain(c syscall.RawConn, n int) error {
	var err error
	cerr := c.Control(func(fd uintptr) {
		if e := unix.Listen(int(fd), n); e != nil {
			err = fmt.Errorf("bind backlog %d: %w", n, os.NewSyscallError("listen", e))
		}
	})
	if cerr != nil {
		return cerr
	}
	return err
}

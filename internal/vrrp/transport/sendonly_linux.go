//go:build linux

package transport

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// ListenSend opens a raw VRRP socket for sending only: a socket filter
// drops every packet the kernel would otherwise queue on it (a raw socket
// receives every VRRP packet of the namespace), so one that nobody reads
// holds nothing. Its ReadPacket blocks until Close.
func ListenSend(family int) (Conn, error) {
	c, err := Listen(family)
	if err != nil {
		return nil, err
	}
	var rc syscall.RawConn
	switch c := c.(type) {
	case *conn4:
		rc = c.r.rc
	case *conn6:
		rc = c.r.rc
	}
	if err := dropAll(rc, family); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// dropAll attaches a filter that accepts nothing ("ret #0") to the
// socket, then reads out what arrived before it did.
func dropAll(rc syscall.RawConn, family int) error {
	var serr error
	if err := rc.Control(func(fd uintptr) {
		prog := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: 0}}
		if serr = unix.SetsockoptSockFprog(int(fd), unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &unix.SockFprog{Len: 1, Filter: &prog[0]}); serr != nil {
			return
		}
		buf := make([]byte, 1)
		for {
			if _, _, err := unix.Recvfrom(int(fd), buf, unix.MSG_DONTWAIT); err != nil {
				return
			}
		}
	}); err != nil {
		return &OpError{Op: "drop-all filter", Family: family, Err: err}
	}
	if serr != nil {
		return &OpError{Op: "drop-all filter (SO_ATTACH_FILTER)", Family: family, Err: serr}
	}
	return nil
}

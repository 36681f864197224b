//go:build linux

package transport

import (
	"net"
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
	var pc net.PacketConn
	switch c := c.(type) {
	case *conn4:
		pc = c.pc
	case *conn6:
		pc = c.pc
	}
	if err := dropAll(pc, family); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// dropAll attaches a filter that accepts nothing ("ret #0") to pc, then
// reads out what arrived before it did.
func dropAll(pc net.PacketConn, family int) error {
	sc, ok := pc.(syscall.Conn)
	if !ok {
		return &OpError{Op: "drop-all filter", Family: family, Err: unix.ENOTSUP}
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return &OpError{Op: "drop-all filter", Family: family, Err: err}
	}
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

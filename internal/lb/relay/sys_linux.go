package relay

import (
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The event loops' system calls on non-blocking sockets return at once, so
// they are made raw: without the scheduler's system call hooks, which cost
// time and, when the runtime's monitor catches a call in flight, hand the
// loop's processor to another thread and leave the loop waiting for one
// on return. (unix.Accept4 would also ask the listening socket for its
// protocol after each accept, one more call.)

func errnoErr(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func Socket(family, typ, proto int) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_SOCKET, uintptr(family), uintptr(typ), uintptr(proto))
	return int(r), errnoErr(e)
}

func SetsockoptInt(fd, level, opt, v int) error {
	val := int32(v)
	_, _, e := unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt), uintptr(unsafe.Pointer(&val)), 4, 0)
	return errnoErr(e)
}

func GetsockoptInt(fd, level, opt int) (int, error) {
	var val int32
	l := uint32(4)
	_, _, e := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt), uintptr(unsafe.Pointer(&val)), uintptr(unsafe.Pointer(&l)), 0)
	return int(val), errnoErr(e)
}

// Connect starts connecting fd to addr.
func Connect(fd int, addr netip.AddrPort, zone uint32) error {
	a := addr.Addr()
	port := addr.Port()
	var e unix.Errno
	if a.Is4() || a.Is4In6() {
		var sa unix.RawSockaddrInet4
		sa.Family = unix.AF_INET
		sa.Port = port<<8 | port>>8
		sa.Addr = a.Unmap().As4()
		_, _, e = unix.RawSyscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&sa)), unsafe.Sizeof(sa))
	} else {
		var sa unix.RawSockaddrInet6
		sa.Family = unix.AF_INET6
		sa.Port = port<<8 | port>>8
		sa.Addr = a.As16()
		sa.Scope_id = zone
		_, _, e = unix.RawSyscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&sa)), unsafe.Sizeof(sa))
	}
	return errnoErr(e)
}

// Accept4 accepts a client on the listening socket fd.
func Accept4(fd, flags int) (int, netip.AddrPort, error) {
	var rsa unix.RawSockaddrAny
	l := uint32(unsafe.Sizeof(rsa))
	r, _, e := unix.RawSyscall6(unix.SYS_ACCEPT4, uintptr(fd), uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&l)), uintptr(flags), 0, 0)
	if e != 0 {
		return -1, netip.AddrPort{}, e
	}
	var peer netip.AddrPort
	switch rsa.Addr.Family {
	case unix.AF_INET:
		p := (*unix.RawSockaddrInet4)(unsafe.Pointer(&rsa))
		peer = netip.AddrPortFrom(netip.AddrFrom4(p.Addr), p.Port<<8|p.Port>>8)
	case unix.AF_INET6:
		p := (*unix.RawSockaddrInet6)(unsafe.Pointer(&rsa))
		peer = netip.AddrPortFrom(netip.AddrFrom16(p.Addr).Unmap(), p.Port<<8|p.Port>>8)
	}
	return int(r), peer, nil
}

func EpollCtl(epfd, op, fd int, ev *unix.EpollEvent) error {
	_, _, e := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(epfd), uintptr(op), uintptr(fd), uintptr(unsafe.Pointer(ev)), 0, 0)
	return errnoErr(e)
}

// EpollPoll takes the events already pending, without waiting.
func EpollPoll(epfd int, events []unix.EpollEvent) (int, error) {
	return EpollWait(epfd, events, 0)
}

// EpollWait is epoll_wait(2) for up to msec milliseconds outside the
// scheduler's system call hooks: the thread keeps its processor while it
// waits. A signal (the runtime's preemption, for one) ends the wait with
// EINTR.
func EpollWait(epfd int, events []unix.EpollEvent, msec int) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(msec), 0, 0)
	return int(r), errnoErr(e)
}

func Close(fd int) {
	unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
}

func Shutdown(fd, how int) error {
	_, _, e := unix.RawSyscall(unix.SYS_SHUTDOWN, uintptr(fd), uintptr(how), 0)
	return errnoErr(e)
}

func Splice(rfd, wfd, n, flags int) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_SPLICE, uintptr(rfd), 0, uintptr(wfd), 0, uintptr(n), uintptr(spliceFlags|flags))
	return int(r), errnoErr(e)
}

// Read and Write are read(2) and write(2) on the loops' eventfds,
// which return at once, so they skip the scheduler's system call hooks.
func Read(fd int, p []byte) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func Write(fd int, p []byte) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// Recv and Send move bytes on the relay's non-blocking sockets:
// recvfrom(2) and sendto(2) go straight to the socket, without the file
// layer's work in read(2) and write(2) (position lock, permission and
// notification hooks): about 3 % of the relay's CPU under keep-alive
// load. Sends pass MSG_NOSIGNAL: a send to a reset peer fails with EPIPE
// instead of raising SIGPIPE.
func Recv(fd int, p []byte) (int, error) { return RecvFlags(fd, p, 0) }

func RecvFlags(fd int, p []byte, flags int) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), uintptr(flags), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func Send(fd int, p []byte, flags int) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), uintptr(flags), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

const spliceFlags = unix.SPLICE_F_MOVE | unix.SPLICE_F_NONBLOCK

package netif

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// eventsRcvbuf is the receive buffer asked for an event socket
// (SO_RCVBUF, within net.core.rmem_max): 10,000 VIPs added at a takeover
// are 10,000 address events.
const eventsRcvbuf = 1 << 20

// eventsBuf is the first size of an event socket's read buffer; a
// datagram larger than it grows it (see events.read).
const eventsBuf = 8 << 10

// events is a NETLINK_ROUTE socket joined to multicast groups, read on the
// caller's goroutine through a buffer on the heap. vishvananda/netlink's
// subscriptions read on a goroutine of their own into a 64 KiB array on
// its stack, which so held 128 KiB for the watch's life, and the large
// stacks raised the size every new goroutine of the process started with
// (the runtime sizes it by the average stack it scans): 0.25 MiB for the
// two watches of the VRRP engine, and 8 KiB stacks kept by its dead
// goroutines (docs/design/memory.md).
type events struct {
	f   *os.File
	rc  syscall.RawConn
	buf []byte
	seq uint32
}

// openEvents opens an event socket joined to groups (RTMGRP_*) in the
// handle's namespace. On a thread already there (always, in the agent) it
// is made without setns, which needs CAP_SYS_ADMIN (see Open).
func (h *Handle) openEvents(groups uint32) (*events, error) {
	fd, err := h.socketInNamespace()
	if err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	// Within rmem_max, as SO_RCVBUF is; a smaller buffer only makes an
	// overflow, and a resubscription, likelier.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, eventsRcvbuf)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: groups}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("subscribe: bind netlink groups %#x: %w", groups, err)
	}
	f := os.NewFile(uintptr(fd), "netlink events")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	return &events{f: f, rc: rc, buf: make([]byte, eventsBuf)}, nil
}

// socketInNamespace makes a non-blocking NETLINK_ROUTE socket in the
// handle's namespace.
func (h *Handle) socketInNamespace() (int, error) {
	runtime.LockOSThread()
	cur, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return -1, fmt.Errorf("current netns: %w", err)
	}
	defer cur.Close()
	in := cur.Equal(h.ns)
	if !in {
		if err := netns.Set(h.ns); err != nil {
			runtime.UnlockOSThread()
			return -1, fmt.Errorf("enter the handle's netns: %w", err)
		}
	}
	fd, serr := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_ROUTE)
	if !in {
		if err := netns.Set(cur); err != nil {
			// The thread stays locked to this goroutine, in the wrong
			// namespace, rather than serve others there.
			if serr == nil {
				unix.Close(fd)
			}
			return -1, fmt.Errorf("return to the thread's netns: %w", err)
		}
	}
	runtime.UnlockOSThread()
	if serr != nil {
		return -1, fmt.Errorf("netlink socket: %w", serr)
	}
	return fd, nil
}

// Close closes the socket; a read waiting on it returns.
func (s *events) Close() { s.f.Close() }

// dump asks the kernel for every object of a table (typ: RTM_GETLINK,
// RTM_GETADDR; msg: the request's family header), answered on the socket
// among the events.
func (s *events) dump(typ uint16, msg []byte) error {
	s.seq++
	b := make([]byte, unix.SizeofNlMsghdr+len(msg))
	hdr := (*unix.NlMsghdr)(unsafe.Pointer(&b[0]))
	*hdr = unix.NlMsghdr{Len: uint32(len(b)), Type: typ, Flags: unix.NLM_F_REQUEST | unix.NLM_F_DUMP, Seq: s.seq}
	copy(b[unix.SizeofNlMsghdr:], msg)
	var serr error
	err := s.rc.Write(func(fd uintptr) bool {
		serr = unix.Sendto(int(fd), b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		return serr != unix.EAGAIN
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("netlink dump request: %w", err)
	}
	return nil
}

// read waits for the next datagram from the kernel and returns its
// messages, which point into the socket's buffer: they are good until the
// next read. It fails with ENOBUFS when the kernel dropped events because
// the socket's buffer was full, and with os.ErrClosed after Close.
func (s *events) read() ([]syscall.NetlinkMessage, error) {
	for {
		var n int
		var from unix.Sockaddr
		var rerr error
		err := s.rc.Read(func(fd uintptr) bool {
			// The datagram's length first (MSG_TRUNC gives netlink's whole
			// length), so that no message is cut.
			n, _, rerr = unix.Recvfrom(int(fd), nil, unix.MSG_PEEK|unix.MSG_TRUNC)
			if rerr != nil {
				return rerr != unix.EAGAIN
			}
			if n > len(s.buf) {
				s.buf = make([]byte, (n+4095)&^4095)
			}
			n, from, rerr = unix.Recvfrom(int(fd), s.buf, 0)
			return rerr != unix.EAGAIN
		})
		if err == nil {
			err = rerr
		}
		if err != nil {
			return nil, err
		}
		if nl, ok := from.(*unix.SockaddrNetlink); !ok || nl.Pid != 0 {
			continue // not the kernel's
		}
		msgs, err := syscall.ParseNetlinkMessage(s.buf[:n])
		if err != nil {
			return nil, fmt.Errorf("netlink event: %w", err)
		}
		return msgs, nil
	}
}

// readAll reads events until ctx is done (then it returns nil) or the
// socket fails, and hands f each message that is not netlink's own
// (NLMSG_DONE, NLMSG_NOOP, an acknowledgement). A negative
// acknowledgement, which only a dump request can cause, ends it with the
// error. delivered says whether f was called.
func (s *events) readAll(ctx context.Context, f func(m *syscall.NetlinkMessage)) (delivered bool, err error) {
	stop := context.AfterFunc(ctx, s.Close)
	defer stop()
	for {
		msgs, err := s.read()
		if ctx.Err() != nil {
			return delivered, nil
		}
		if err != nil {
			return delivered, err
		}
		for i := range msgs {
			m := &msgs[i]
			switch m.Header.Type {
			case unix.NLMSG_DONE, unix.NLMSG_NOOP:
				continue
			case unix.NLMSG_ERROR:
				if len(m.Data) < 4 {
					return delivered, errors.New("netlink error message: short")
				}
				if code := int32(binary.NativeEndian.Uint32(m.Data[:4])); code != 0 {
					return delivered, fmt.Errorf("netlink dump: %w", syscall.Errno(-code))
				}
				continue
			}
			delivered = true
			f(m)
		}
	}
}

// parseLinkEvent reads an RTM_NEWLINK or RTM_DELLINK message: the link's
// index and name, and whether it is up (LinkInfo.Up: IFF_UP and
// IFF_RUNNING).
func parseLinkEvent(m *syscall.NetlinkMessage) (index int, name string, up bool, err error) {
	if len(m.Data) < unix.SizeofIfInfomsg {
		return 0, "", false, errors.New("link event: short message")
	}
	info := (*unix.IfInfomsg)(unsafe.Pointer(&m.Data[0]))
	attrs, err := syscall.ParseNetlinkRouteAttr(m)
	if err != nil {
		return 0, "", false, fmt.Errorf("link event: %w", err)
	}
	for _, a := range attrs {
		if a.Attr.Type == unix.IFLA_IFNAME {
			v := a.Value
			for len(v) > 0 && v[len(v)-1] == 0 {
				v = v[:len(v)-1]
			}
			name = string(v)
		}
	}
	up = info.Flags&unix.IFF_UP != 0 && info.Flags&unix.IFF_RUNNING != 0
	return int(info.Index), name, up, nil
}

// parseAddrEvent reads an RTM_NEWADDR or RTM_DELADDR message: the
// interface's address with its prefix length. The kernel gives IPv4's
// local address as IFA_LOCAL, and as IFA_ADDRESS the peer's on a
// point-to-point link; IPv6's as IFA_ADDRESS alone.
func parseAddrEvent(m *syscall.NetlinkMessage) (netip.Prefix, error) {
	if len(m.Data) < unix.SizeofIfAddrmsg {
		return netip.Prefix{}, errors.New("address event: short message")
	}
	msg := (*unix.IfAddrmsg)(unsafe.Pointer(&m.Data[0]))
	attrs, err := syscall.ParseNetlinkRouteAttr(m)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("address event: %w", err)
	}
	var addr, local []byte
	for _, a := range attrs {
		switch a.Attr.Type {
		case unix.IFA_ADDRESS:
			addr = a.Value
		case unix.IFA_LOCAL:
			local = a.Value
		}
	}
	if local != nil {
		addr = local
	}
	ip, ok := netip.AddrFromSlice(addr)
	if !ok {
		return netip.Prefix{}, fmt.Errorf("address event: address of %d bytes", len(addr))
	}
	p := netip.PrefixFrom(ip.Unmap(), int(msg.Prefixlen))
	if !p.IsValid() {
		return netip.Prefix{}, fmt.Errorf("address event: prefix length %d for %s", msg.Prefixlen, ip)
	}
	return p, nil
}

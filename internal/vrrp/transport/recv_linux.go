//go:build linux

package transport

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"unsafe"
)

// recv is what one read of a raw socket needs, kept with the socket so
// that a read into the caller's buffer allocates nothing: x/net's ReadFrom
// made a header, a control message and a sockaddr for every packet (each
// advertisement a backup hears, docs/design/memory.md). Guarded by the
// socket's rmu.
type recv struct {
	rc   syscall.RawConn
	do   func(fd uintptr) bool // recvmsg, made once (a method value allocates)
	msg  syscall.Msghdr
	iov  syscall.Iovec
	name syscall.RawSockaddrInet6 // room for either family's source
	oob  []byte
	n    int
	err  error
}

func newRecv(pc net.PacketConn) (*recv, error) {
	rc, err := rawConn(pc)
	if err != nil {
		return nil, err
	}
	// Room for a packet-info and an int control message of either family
	// (IP_PKTINFO and IP_TTL; IPV6_PKTINFO and IPV6_HOPLIMIT), and more.
	r := &recv{rc: rc, oob: make([]byte, 2*syscall.CmsgSpace(syscall.SizeofInet6Pktinfo)+2*syscall.CmsgSpace(4))}
	r.do = r.recvmsg
	return r, nil
}

// read reads one datagram into buf, returning its length (cut to len(buf)),
// the control messages and the source's raw sockaddr.
func (r *recv) read(buf []byte) (int, []byte, error) {
	if len(buf) == 0 {
		return 0, nil, fmt.Errorf("read into an empty buffer")
	}
	r.iov.Base = &buf[0]
	r.iov.SetLen(len(buf))
	r.msg = syscall.Msghdr{Iov: &r.iov, Iovlen: 1, Name: (*byte)(unsafe.Pointer(&r.name)), Namelen: syscall.SizeofSockaddrInet6, Control: &r.oob[0]}
	r.msg.SetControllen(len(r.oob))
	err := r.rc.Read(r.do)
	r.iov.Base = nil // buf is the caller's again
	if err != nil {
		return 0, nil, err
	}
	if r.err != nil {
		return 0, nil, r.err
	}
	return min(r.n, len(buf)), r.oob[:min(int(r.msg.Controllen), len(r.oob))], nil
}

// recvmsg is the RawConn.Read callback: false asks to wait until the
// socket is readable and try again.
//
// The socket is non-blocking (the netpoller waits for it), so recvmsg
// returns at once and is made as a raw system call, without telling the
// scheduler. Told, the scheduler wakes its monitor thread (sysmon) from its
// sleep to watch the call, and sysmon then naps 20 us at a time for a
// while: on a backup hearing 100 advertisements a second, 800 wake-ups a
// second and 2 % of a CPU (docs/design/realtime.md).
func (r *recv) recvmsg(fd uintptr) bool {
	n, _, errno := syscall.RawSyscall(syscall.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&r.msg)), syscall.MSG_DONTWAIT)
	for errno == syscall.EINTR {
		n, _, errno = syscall.RawSyscall(syscall.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&r.msg)), syscall.MSG_DONTWAIT)
	}
	if errno == syscall.EAGAIN {
		return false
	}
	r.n, r.err = int(n), nil
	if errno != 0 {
		r.err = errno
	}
	return true
}

// cmsgInfo is what the control messages of one packet say.
type cmsgInfo struct {
	ifIndex int
	hops    int // IPV6_HOPLIMIT; -1 when absent
	dst     netip.Addr
}

// parseCmsgs reads the packet-info and hop-limit control messages in oob
// (as the kernel wrote them: aligned headers, native byte order).
func parseCmsgs(oob []byte) cmsgInfo {
	info := cmsgInfo{hops: -1}
	hdr := syscall.CmsgLen(0)
	for len(oob) >= hdr {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			break
		}
		data := oob[hdr:l]
		switch {
		case h.Level == syscall.IPPROTO_IP && h.Type == syscall.IP_PKTINFO && len(data) >= syscall.SizeofInet4Pktinfo:
			info.ifIndex = int(int32(binary.NativeEndian.Uint32(data)))
		case h.Level == syscall.IPPROTO_IPV6 && h.Type == syscall.IPV6_PKTINFO && len(data) >= syscall.SizeofInet6Pktinfo:
			info.dst = netip.AddrFrom16([16]byte(data))
			info.ifIndex = int(binary.NativeEndian.Uint32(data[16:]))
		case h.Level == syscall.IPPROTO_IPV6 && h.Type == syscall.IPV6_HOPLIMIT && len(data) >= 4:
			info.hops = int(int32(binary.NativeEndian.Uint32(data)))
		}
		next := syscall.CmsgSpace(l - hdr)
		if next > len(oob) {
			break
		}
		oob = oob[next:]
	}
	return info
}

// ReadPacketInto is ReadPacket reading into buf, which should hold
// bufSize bytes (a longer packet is cut short): the Payload is part of
// buf, valid until buf is reused. A reader that is done with each
// packet before the next reads without allocating.
func (c *conn4) ReadPacketInto(buf []byte) (Packet, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for {
		n, oob, err := c.r.read(buf)
		if err != nil {
			return Packet{}, &OpError{Op: "read", Family: 4, Err: err}
		}
		// A raw IPv4 socket gets the IP header with the payload.
		b := buf[:n]
		if len(b) < 20 || b[0]>>4 != 4 {
			continue
		}
		hl := int(b[0]&0x0f) * 4
		if hl < 20 || len(b) < hl || b[9] != protocol {
			continue
		}
		p := Packet{
			Payload: b[hl:],
			Src:     netip.AddrFrom4([4]byte(b[12:16])),
			Dst:     netip.AddrFrom4([4]byte(b[16:20])),
			TTL:     int(b[8]),
			IfIndex: parseCmsgs(oob).ifIndex,
		}
		return p, nil
	}
}

// ReadPacketInto is ReadPacket reading into buf (see conn4.ReadPacketInto).
func (c *conn6) ReadPacketInto(buf []byte) (Packet, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	n, oob, err := c.r.read(buf)
	if err != nil {
		return Packet{}, &OpError{Op: "read", Family: 6, Err: err}
	}
	info := parseCmsgs(oob)
	p := Packet{Payload: buf[:n], TTL: info.hops, IfIndex: info.ifIndex, Dst: info.dst}
	if c.r.name.Family == syscall.AF_INET6 {
		p.Src = netip.AddrFrom16(c.r.name.Addr).Unmap()
	}
	return p, nil
}

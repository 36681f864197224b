package relay

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Side is one socket of a relayed connection and what epoll last said
// about it.
type Side struct {
	FD                int // -1: none
	CanRead, CanWrite bool
	RDHUP             bool // the peer's FIN (or a hang-up) was reported
	FIN               bool // the peer's FIN was reported, with no hang-up or error
}

// Dir is one direction of a connection: what was read from src and is
// still to be written to dst.
type Dir struct {
	buf      *copyBuf // copy mode: buf[off:end] is still to be written
	off, end int
	p        *Pipe // splice mode: inPipe bytes wait in p
	inPipe   int
	splice   bool  // bulk seen: splice from now on
	rerr     error // a read failed after reading bytes still to be written
	// EOF: src ended (what was read before may still be to write).
	EOF bool
	// Done: EOF passed on (dst shut down for writing, or closing); the
	// caller sets it.
	Done bool
}

// Pending reports whether bytes read are still to be written.
func (d *Dir) Pending() bool { return d.end > d.off || d.inPipe > 0 }

// Pools are the copy buffers and splice pipes the directions of a load
// balancer's connections take while data is in flight.
type Pools struct {
	bufs  sync.Pool // *copyBuf
	pipes PipePool
}

// CopyBufSize is the buffer a direction copies through until it sees bulk
// data (haproxy's default tune.bufsize).
const CopyBufSize = 16 << 10

// copyBuf is a pooled copy buffer.
type copyBuf [CopyBufSize]byte

// splicedBytes counts the bytes every LB of the process has written to a
// destination with splice(2) (Spliced). Splice is an optimisation the relay works
// without, so no outcome a client sees tells whether it is used: tests
// read this to see that bulk data takes the splice path and short
// messages do not. One atomic add per splice call, which moves up to a
// pipe's worth (1 MiB), costs nothing next to the call.
var splicedBytes atomic.Uint64

// Spliced is the number of bytes written with splice(2) so far, by every
// load balancer of the process.
func Spliced() uint64 { return splicedBytes.Load() }

// Fill reads what src holds: through the copy buffer until a read fills
// it, then (bulk) with splice(2) into a pipe, so the payload no longer
// enters user space. A direction holds a buffer or pipe only while data
// is in flight.
func (d *Dir) Fill(l *Pools, src *Side) error {
	if d.splice {
		return d.fillPipe(l, src)
	}
	if d.rerr != nil {
		return d.rerr
	}
	if d.buf == nil {
		d.buf = l.getBuf()
	}
	for {
		n, err := Recv(src.FD, d.buf[d.end:])
		switch err {
		case nil:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			src.CanRead = false
			if d.end == d.off {
				d.putBuf(l)
			}
			return nil
		default:
			if d.end > d.off {
				// Reading on after a FIN or hang-up failed: write what
				// was read first, then end with the error.
				d.rerr = os.NewSyscallError("recvfrom", err)
				return nil
			}
			return os.NewSyscallError("recvfrom", err)
		}
		if n == 0 {
			d.EOF = true
			if d.end == d.off {
				d.putBuf(l)
			}
			return nil
		}
		want := len(d.buf) - d.end
		d.end += n
		if n == want {
			d.splice = true // bulk: splice once this buffer is written
			return nil
		}
		if src.FIN {
			// The FIN was in the receive queue before this read, behind
			// every byte the peer sent, and a read that did not fill the
			// buffer took all of them and the FIN: the next would return 0.
			d.EOF = true
			return nil
		}
		if !src.RDHUP {
			// A short read drained the socket; what comes later raises
			// an event.
			src.CanRead = false
			return nil
		}
		// After a reported FIN, read on: this read may have consumed
		// it, and seeing the end before writing lets the last bytes
		// leave with the FIN (see Flush).
	}
}

// getBuf takes a copy buffer from the pool.
func (l *Pools) getBuf() *copyBuf {
	if v := l.bufs.Get(); v != nil {
		return v.(*copyBuf)
	}
	return new(copyBuf)
}

func (d *Dir) putBuf(l *Pools) {
	if d.buf != nil {
		l.bufs.Put(d.buf)
		d.buf = nil
	}
	d.off, d.end = 0, 0
}

func (d *Dir) fillPipe(l *Pools, src *Side) error {
	d.putBuf(l) // left over from copy mode, empty
	if d.p == nil {
		p, err := l.pipes.Get()
		if err != nil {
			return err
		}
		d.p = p
	}
	for {
		n, err := Splice(src.FD, d.p.W, d.p.Size, 0)
		switch err {
		case nil:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			src.CanRead = false
			l.pipes.Put(d.p)
			d.p = nil
			return nil
		default:
			return os.NewSyscallError("splice", err)
		}
		if n == 0 {
			d.EOF = true
			l.pipes.Put(d.p)
			d.p = nil
			return nil
		}
		d.inPipe = int(n)
		return nil
	}
}

// Flush writes what Fill read to dst and returns how many bytes it
// wrote. It stops when dst is full (dst.CanWrite turns false).
//
// last says the source has ended and these are its last bytes: they are
// sent with MSG_MORE (SPLICE_F_MORE), which keeps a short tail in the
// kernel, and the shutdown or close that follows at once sends it with
// the FIN in one segment, instead of the tail and then a FIN of its own
// that the peer acknowledges apart.
func (d *Dir) Flush(l *Pools, dst *Side, last bool) (int, error) {
	total := 0
	sendFlags, spliceMore := unix.MSG_NOSIGNAL, 0
	if last {
		sendFlags |= unix.MSG_MORE
		spliceMore = unix.SPLICE_F_MORE
	}
	for d.end > d.off {
		n, err := Send(dst.FD, d.buf[d.off:d.end], sendFlags)
		switch err {
		case nil:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			dst.CanWrite = false
			return total, nil
		default:
			return total, os.NewSyscallError("sendto", err)
		}
		d.off += n
		total += n
		if d.off < d.end {
			dst.CanWrite = false // a short write filled the send buffer
			return total, nil
		}
		d.putBuf(l)
	}
	for d.inPipe > 0 {
		n, err := Splice(d.p.R, dst.FD, d.inPipe, spliceMore)
		switch err {
		case nil:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			dst.CanWrite = false
			return total, nil
		default:
			return total, os.NewSyscallError("splice", err)
		}
		if n == 0 {
			return total, errors.New("splice: wrote nothing")
		}
		d.inPipe -= int(n)
		total += int(n)
		splicedBytes.Add(uint64(n))
		if d.inPipe == 0 {
			l.pipes.Put(d.p)
			d.p = nil
		}
	}
	return total, nil
}

// Release gives back the direction's buffer and pipe.
func (d *Dir) Release(l *Pools) {
	d.putBuf(l)
	if d.p == nil {
		return
	}
	if d.inPipe > 0 {
		d.p.Destroy()
	} else {
		l.pipes.Put(d.p)
	}
	d.p, d.inPipe = nil, 0
}

// DialStart opens a non-blocking socket and starts connecting it to addr.
func DialStart(addr netip.AddrPort) (int, error) {
	family := unix.AF_INET6
	var zone uint32
	if a := addr.Addr(); a.Is4() || a.Is4In6() {
		family = unix.AF_INET
	} else if z := a.Zone(); z != "" {
		if ifi, err := net.InterfaceByName(z); err == nil {
			zone = uint32(ifi.Index)
		}
	}
	fd, err := Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	// As Go's net package does for every TCP connection: relayed messages
	// leave at once.
	SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	for {
		err = Connect(fd, addr, zone)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil && err != unix.EINPROGRESS {
		Close(fd)
		return -1, os.NewSyscallError("connect", err)
	}
	return fd, nil
}

// AcceptFD duplicates ln's socket for the event loops, which accept on it
// themselves. The duplicate shares the socket's non-blocking mode; ln can
// be closed at once.
func AcceptFD(ln *net.TCPListener) (int, error) {
	rc, err := ln.SyscallConn()
	if err != nil {
		return -1, err
	}
	nfd := -1
	var derr error
	if err := rc.Control(func(fd uintptr) {
		nfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, os.NewSyscallError("fcntl", derr)
	}
	return nfd, nil
}

// LocalAddr is the address a connected socket is bound to.
func LocalAddr(fd int) netip.AddrPort {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return netip.AddrPort{}
	}
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port))
	}
	return netip.AddrPort{}
}

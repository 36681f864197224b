package lb

import (
	"errors"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pipeSize is the capacity asked for each splice pipe (Go's net package
// uses the same); the kernel may refuse it to unprivileged users past
// fs.pipe-user-pages-soft, and the pipe keeps its default 64 KiB.
const pipeSize = 1 << 20

// spipe is a pipe for splice(2).
type spipe struct {
	r, w    int
	size    int
	cleanup runtime.Cleanup
}

// pipePool keeps empty pipes for reuse. A pipe the garbage collector drops
// from the pool is closed by its cleanup.
type pipePool struct{ p sync.Pool }

func (pp *pipePool) get() (*spipe, error) {
	if v := pp.p.Get(); v != nil {
		return v.(*spipe), nil
	}
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, os.NewSyscallError("pipe2", err)
	}
	p := &spipe{r: fds[0], w: fds[1], size: 64 << 10}
	if n, err := unix.FcntlInt(uintptr(fds[0]), unix.F_SETPIPE_SZ, pipeSize); err == nil {
		p.size = n
	}
	p.cleanup = runtime.AddCleanup(p, closePipe, fds)
	return p, nil
}

// put returns an empty pipe to the pool.
func (pp *pipePool) put(p *spipe) { pp.p.Put(p) }

// destroy closes a pipe that still holds data.
func (p *spipe) destroy() {
	p.cleanup.Stop()
	closePipe([2]int{p.r, p.w})
}

func closePipe(fds [2]int) {
	unix.Close(fds[0])
	unix.Close(fds[1])
}

// copyBufSize is the buffer a direction copies through until it sees bulk
// data (haproxy's default tune.bufsize).
const copyBufSize = 16 << 10

// copyBuf is a pooled copy buffer.
type copyBuf [copyBufSize]byte

// spliceDir relays one direction of a connection. It starts by copying
// through a small buffer, which costs less than splice(2) for the short
// messages of request and response traffic; once a read fills the buffer
// it switches to splice, socket to pipe to socket, and the payload no
// longer enters user space. It holds a buffer or pipe only while data is
// in flight.
type spliceDir struct {
	pipes    *pipePool
	bufs     *sync.Pool
	src, dst syscall.RawConn
	splice   bool     // bulk seen: splice from now on
	p        *spipe   // splice mode: the pipe, nil while idle
	inPipe   int      // bytes in p
	buf      *copyBuf // copy mode: the buffer, nil while idle
	off, end int      // buf[off:end] is still to be written
	eof      bool
	err      error
	counters [3]*atomic.Uint64
	readFn   func(fd uintptr) bool
	writeFn  func(fd uintptr) bool

	// Copy mode relays inside one raw write on dst (pumpFn) that reads src
	// in a nested raw read (copyFn) and writes to dfd, dst's descriptor,
	// which that outer call keeps open.
	pumpFn, copyFn func(fd uintptr) bool
	dfd            int
	msg            inqMsg
	inq            int8 // TCP_INQ on src: 0 not tried, 1 on, -1 unavailable
	reads          int  // reads that returned data, up to when TCP_INQ is tried
}

// inqMsg is a recvmsg(2) header that asks for TCP_CM_INQ: how many bytes
// the socket still holds after the read, or 1 when a FIN has arrived
// (tcp_inq_hint in the kernel). Zero means the read drained the socket,
// so the relay can wait for readability instead of reading once more to
// see EAGAIN: a system call saved per message. The FIN case matters: a
// short read that consumed a FIN leaves no later readiness event.
type inqMsg struct {
	hdr unix.Msghdr
	iov unix.Iovec
	oob [32]byte
}

const spliceFlags = unix.SPLICE_F_MOVE | unix.SPLICE_F_NONBLOCK

// fill reads what the source socket holds. It returns false (wait for
// readability) when there is nothing, after giving the buffer or pipe
// back: an idle connection holds neither.
func (d *spliceDir) fill(fd uintptr) bool {
	if d.splice {
		return d.fillPipe(fd)
	}
	if d.buf == nil {
		d.buf = d.bufs.Get().(*copyBuf)
	}
	for {
		n, err := unix.Read(int(fd), d.buf[:])
		switch err {
		case nil:
			if n == 0 {
				d.eof = true
			}
			d.off, d.end = 0, n
			if n == len(d.buf) {
				d.splice = true // bulk: splice after this buffer is written
			}
			return true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			d.bufs.Put(d.buf)
			d.buf = nil
			return false
		}
		d.err = os.NewSyscallError("read", err)
		return true
	}
}

func (d *spliceDir) fillPipe(fd uintptr) bool {
	if d.buf != nil { // left over from copy mode, empty
		d.bufs.Put(d.buf)
		d.buf = nil
	}
	if d.p == nil {
		p, err := d.pipes.get()
		if err != nil {
			d.err = err
			return true
		}
		d.p = p
	}
	for {
		n, err := unix.Splice(int(fd), nil, d.p.w, nil, d.p.size, spliceFlags)
		switch err {
		case nil:
			if n == 0 {
				d.eof = true
			}
			d.inPipe = int(n)
			return true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			d.pipes.put(d.p)
			d.p = nil
			return false
		}
		d.err = os.NewSyscallError("splice", err)
		return true
	}
}

func (d *spliceDir) count(n int) {
	for _, c := range d.counters {
		c.Add(uint64(n))
	}
}

// drain writes what fill read to the destination socket, counting bytes
// as they go. It returns false (wait for writability) when the socket's
// send buffer is full.
func (d *spliceDir) drain(fd uintptr) bool {
	for d.buf != nil && d.off < d.end {
		n, err := unix.Write(int(fd), d.buf[d.off:d.end])
		switch err {
		case nil:
			d.off += n
			d.count(n)
		case unix.EINTR:
		case unix.EAGAIN:
			return false
		default:
			d.err = os.NewSyscallError("write", err)
			return true
		}
	}
	for d.inPipe > 0 {
		n, err := unix.Splice(d.p.r, nil, int(fd), nil, d.inPipe, spliceFlags)
		switch err {
		case nil:
			if n == 0 {
				d.err = errors.New("splice: wrote nothing")
				return true
			}
			d.inPipe -= int(n)
			d.count(int(n))
		case unix.EINTR:
		case unix.EAGAIN:
			return false
		default:
			d.err = os.NewSyscallError("splice", err)
			return true
		}
	}
	return true
}

func (d *spliceDir) run() error {
	defer d.release()
	for !d.splice {
		if err := d.dst.Write(d.pumpFn); err != nil {
			return err
		}
		if d.err != nil || d.eof {
			return d.err
		}
	}
	for {
		if err := d.src.Read(d.readFn); err != nil {
			return err
		}
		if d.err != nil || d.eof {
			return d.err
		}
		if err := d.dst.Write(d.writeFn); err != nil {
			return err
		}
		if d.err != nil {
			return d.err
		}
	}
}

func (d *spliceDir) release() {
	if d.buf != nil {
		d.bufs.Put(d.buf)
		d.buf = nil
	}
	if d.p == nil {
		return
	}
	if d.inPipe > 0 {
		d.p.destroy()
	} else {
		d.pipes.put(d.p)
	}
	d.p = nil
}

// copyConn relays src to dst until src reaches end of file (nil) or an
// error, adding every byte to the counters.
func (l *LB) copyConn(dst, src *net.TCPConn, c1, c2, c3 *atomic.Uint64) error {
	rs, err := src.SyscallConn()
	if err != nil {
		return err
	}
	rd, err := dst.SyscallConn()
	if err != nil {
		return err
	}
	d := &spliceDir{pipes: &l.pipes, bufs: &l.bufs, src: rs, dst: rd, counters: [3]*atomic.Uint64{c1, c2, c3}}
	d.readFn, d.writeFn = d.fill, d.drain
	d.pumpFn, d.copyFn = d.pump, d.copy
	return d.run()
}

// pump is copy mode's raw write on dst (fd): it writes what is left from
// before, then relays src to fd in a nested raw read of src until end of
// file, an error, bulk data (splice mode takes over) or a write that
// would block (false: wait for writability, then again).
func (d *spliceDir) pump(fd uintptr) bool {
	for {
		if !d.drain(fd) {
			return false
		}
		if d.err != nil || d.eof || d.splice {
			return true
		}
		d.dfd = int(fd)
		if err := d.src.Read(d.copyFn); err != nil {
			d.err = err
			return true
		}
	}
}

// copy reads src (fd) and writes each read to dfd at once. It returns
// false (wait for readability) when src is drained, true when pump must
// act: end of file, an error, a blocked write (data left in buf), or a
// full buffer (bulk: switch to splice once buf is written).
func (d *spliceDir) copy(fd uintptr) bool {
	if d.inq == 0 && d.reads >= 2 {
		// TCP_INQ costs a system call per socket: only for connections
		// that carry more than one message (keep-alive), not for the
		// one-request connections that would not gain from it.
		d.inq = -1
		if enableInq(fd, d) {
			d.inq = 1
		}
	}
	if d.buf == nil {
		d.buf = d.bufs.Get().(*copyBuf)
	}
	for {
		n, more, err := d.read(fd)
		switch err {
		case nil:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			d.bufs.Put(d.buf)
			d.buf = nil
			return false
		default:
			d.err = os.NewSyscallError("read", err)
			return true
		}
		if n == 0 {
			d.eof = true
			return true
		}
		d.reads++
		d.off, d.end = 0, n
		for d.off < d.end {
			w, err := rawWrite(d.dfd, d.buf[d.off:d.end])
			switch err {
			case nil:
				d.off += w
				d.count(w)
			case unix.EINTR:
			case unix.EAGAIN:
				return true // pump waits until dst can take the rest
			default:
				d.err = os.NewSyscallError("write", err)
				return true
			}
		}
		if n == len(d.buf) {
			d.splice = true // bulk: splice from now on
			return true
		}
		if !more {
			d.bufs.Put(d.buf)
			d.buf = nil
			return false
		}
	}
}

// enableInq turns TCP_INQ on for fd and readies d's recvmsg header.
func enableInq(fd uintptr, d *spliceDir) bool {
	if unix.SetsockoptInt(int(fd), unix.SOL_TCP, unix.TCP_INQ, 1) != nil {
		return false
	}
	d.msg.hdr.Iov = &d.msg.iov
	d.msg.hdr.SetIovlen(1)
	d.msg.hdr.Control = &d.msg.oob[0]
	return true
}

// read reads src into buf. more is false only when the kernel said the
// socket holds nothing more (TCP_CM_INQ of 0); without TCP_INQ it is
// always true and the caller reads until EAGAIN.
func (d *spliceDir) read(fd uintptr) (n int, more bool, err error) {
	if d.inq != 1 {
		n, err := rawRead(int(fd), d.buf[:])
		return n, true, err
	}
	m := &d.msg
	m.iov.Base = &d.buf[0]
	m.iov.SetLen(len(d.buf))
	m.hdr.SetControllen(len(m.oob))
	m.hdr.Flags = 0
	r, _, e := unix.RawSyscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&m.hdr)), 0)
	if e != 0 {
		return 0, true, e
	}
	more = true
	if int(m.hdr.Controllen) >= unix.CmsgLen(4) {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&m.oob[0]))
		if h.Level == unix.SOL_TCP && h.Type == unix.TCP_CM_INQ {
			more = *(*int32)(unsafe.Pointer(&m.oob[unix.CmsgLen(0)])) != 0
		}
	}
	return int(r), more, nil
}

// rawRead and rawWrite are read(2) and write(2) on non-blocking sockets,
// which return at once, so they skip the scheduler's system call hooks.
func rawRead(fd int, p []byte) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func rawWrite(fd int, p []byte) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

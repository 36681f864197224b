//go:build linux

// Command uringrelay is an experiment, not part of vipstack: a bare TCP relay
// on io_uring, written to measure what a completion-based relay would save
// against the epoll relay of internal/lb. It was measured on 2026-11-22; the
// figures and the reasoning are in the git history of docs/benchmarks.md
// (the section "An io_uring relay, measured as a prototype", which the page
// dropped on 2026-11-28 when it was cut to the current figures).
//
// Each of -n loops owns a ring (SINGLE_ISSUER, DEFER_TASKRUN) and a
// SO_REUSEPORT listener. It accepts with a multishot accept, connects to the
// next backend round-robin with a blocking connect(2), and relays with a
// multishot recv per socket into a ring of provided 16 KiB buffers; each
// direction keeps one send in flight and queues the rest in order. All of a
// batch's sends go to the kernel with the next wait, in one io_uring_enter.
//
// What it lacks, on purpose: timeouts, health checks, maxconn, splice,
// connect retries, IPv6, statistics, error reporting. Run it only as
// cpu-per-request.sh does, on loopback.
package main

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	opAccept = 13
	opSend   = 26
	opRecv   = 27
	opClose  = 19
	opShut   = 34

	sqeBufSelect = 1 << 5
	recvMulti    = 1 << 1
	acceptMulti  = 1 << 0

	cqeFBuffer = 1 << 0
	cqeFMore   = 1 << 1

	setupSingleIssuer = 1 << 12
	setupDeferTaskrun = 1 << 13
	setupCoopTaskrun  = 1 << 8

	enterGetEvents = 1
)

type sqOff struct {
	head, tail, mask, entries, flags, dropped, array, resv1 uint32
	userAddr                                                uint64
}
type cqOff struct {
	head, tail, mask, entries, overflow, cqes, flags, resv1 uint32
	userAddr                                                uint64
}
type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sq                                                                     sqOff
	cq                                                                     cqOff
}
type sqe struct {
	opcode   uint8
	flags    uint8
	ioprio   uint16
	fd       int32
	off      uint64
	addr     uint64
	len      uint32
	opFlags  uint32
	userData uint64
	bufGroup uint16
	pers     uint16
	fileIdx  int32
	addr3    uint64
	pad      uint64
}
type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}
type bufReg struct {
	ringAddr    uint64
	ringEntries uint32
	bgid        uint16
	flags       uint16
	resv        [3]uint64
}

type ring struct {
	fd                             int
	sqHead, sqTail, cqHead, cqTail *uint32
	sqMask, cqMask                 uint32
	sqArray                        []uint32
	sqes                           []sqe
	cqes                           []cqe
	local                          uint32 // our sq tail
	pending                        uint32
}

func newRing(entries uint32, flags uint32) (*ring, error) {
	var p params
	p.flags = flags
	p.cqEntries = entries * 4
	p.flags |= 1 << 3 // CQSIZE
	fd, _, e := unix.Syscall(425, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", e)
	}
	r := &ring{fd: int(fd)}
	sz := int(p.sq.array + p.sqEntries*4)
	if c := int(p.cq.cqes + p.cqEntries*16); c > sz {
		sz = c
	}
	mem, err := unix.Mmap(r.fd, 0, sz, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, err
	}
	b := unsafe.Pointer(&mem[0])
	r.sqHead = (*uint32)(unsafe.Add(b, p.sq.head))
	r.sqTail = (*uint32)(unsafe.Add(b, p.sq.tail))
	r.sqMask = *(*uint32)(unsafe.Add(b, p.sq.mask))
	r.sqArray = unsafe.Slice((*uint32)(unsafe.Add(b, p.sq.array)), p.sqEntries)
	r.cqHead = (*uint32)(unsafe.Add(b, p.cq.head))
	r.cqTail = (*uint32)(unsafe.Add(b, p.cq.tail))
	r.cqMask = *(*uint32)(unsafe.Add(b, p.cq.mask))
	r.cqes = unsafe.Slice((*cqe)(unsafe.Add(b, p.cq.cqes)), p.cqEntries)
	smem, err := unix.Mmap(r.fd, 0x10000000, int(p.sqEntries)*64, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, err
	}
	r.sqes = unsafe.Slice((*sqe)(unsafe.Pointer(&smem[0])), p.sqEntries)
	for i := range r.sqArray {
		r.sqArray[i] = uint32(i)
	}
	r.local = atomic.LoadUint32(r.sqTail)
	return r, nil
}

func (r *ring) get() *sqe {
	head := atomic.LoadUint32(r.sqHead)
	if r.local-head > r.sqMask {
		r.enter(0) // flush
	}
	s := &r.sqes[r.local&r.sqMask]
	*s = sqe{}
	r.local++
	r.pending++
	return s
}

func (r *ring) enter(wait uint32) {
	atomic.StoreUint32(r.sqTail, r.local)
	fl := uintptr(0)
	if wait > 0 {
		fl = enterGetEvents
	}
	for {
		_, _, e := unix.Syscall6(426, uintptr(r.fd), uintptr(r.pending), uintptr(wait), fl, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 && e != unix.EAGAIN && e != unix.EBUSY {
			panic(fmt.Sprintf("io_uring_enter: %v", e))
		}
		break
	}
	r.pending = 0
}

// buffer ring
type bufRing struct {
	entries uint32
	mask    uint32
	bufs    []byte
	size    int
	ring    []byte
	tail    *uint16
	local   uint16
}

func newBufRing(r *ring, bgid uint16, n uint32, size int) (*bufRing, error) {
	rm, err := unix.Mmap(-1, 0, int(n)*16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, err
	}
	bm, err := unix.Mmap(-1, 0, int(n)*size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE|unix.MAP_POPULATE)
	if err != nil {
		return nil, err
	}
	br := &bufRing{entries: n, mask: n - 1, bufs: bm, size: size, ring: rm}
	br.tail = (*uint16)(unsafe.Pointer(&rm[14]))
	reg := bufReg{ringAddr: uint64(uintptr(unsafe.Pointer(&rm[0]))), ringEntries: n, bgid: bgid}
	_, _, e := unix.Syscall6(427, uintptr(r.fd), 22, uintptr(unsafe.Pointer(&reg)), 1, 0, 0)
	if e != 0 {
		return nil, fmt.Errorf("register pbuf ring: %w", e)
	}
	for i := uint32(0); i < n; i++ {
		br.add(uint16(i))
	}
	br.publish()
	return br, nil
}

func (br *bufRing) add(bid uint16) {
	off := int(uint32(br.local)&br.mask) * 16
	e := br.ring[off : off+16]
	*(*uint64)(unsafe.Pointer(&e[0])) = uint64(uintptr(unsafe.Pointer(&br.bufs[int(bid)*br.size])))
	*(*uint32)(unsafe.Pointer(&e[8])) = uint32(br.size)
	*(*uint16)(unsafe.Pointer(&e[12])) = bid
	br.local++
}
func (br *bufRing) publish() { storeTail(br.tail, br.local) }

func storeTail(p *uint16, v uint16) {
	// release store of a u16: atomic on the containing aligned u32 (bytes 12..15 holds bid(12..13) resv(14..15))
	p32 := (*uint32)(unsafe.Add(unsafe.Pointer(p), -2))
	for {
		old := atomic.LoadUint32(p32)
		nw := (old & 0xffff) | uint32(v)<<16
		if atomic.CompareAndSwapUint32(p32, old, nw) {
			return
		}
	}
}

// relay
type pend struct {
	bid      uint16
	off, end int
}
type dirq struct {
	q        []pend
	inflight bool
	eof      bool // source finished
	shut     bool
}
type conn struct {
	fds    [2]int  // 0 client, 1 server
	d      [2]dirq // d[0]: client->server, d[1]: server->client
	closed int
	recvOn [2]bool
	refs   int
}

type loop struct {
	r     *ring
	br    *bufRing
	conns map[uint32]*conn
	next  uint32
	lnfd  int
	bes   []netip.AddrPort
	rr    int
}

// user data: kind(8) | side(8) | id(32)
const (
	kAccept = 1
	kRecv   = 2
	kSend   = 3
	kClose  = 4
	kShut   = 5
)

func ud(kind, side int, id uint32) uint64 { return uint64(kind)<<56 | uint64(side)<<48 | uint64(id) }

func (lp *loop) armAccept() {
	s := lp.r.get()
	s.opcode = opAccept
	s.fd = int32(lp.lnfd)
	s.ioprio = acceptMulti
	s.opFlags = unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC
	s.userData = ud(kAccept, 0, 0)
}

func (lp *loop) armRecv(id uint32, side int) {
	c := lp.conns[id]
	s := lp.r.get()
	s.opcode = opRecv
	s.fd = int32(c.fds[side])
	s.ioprio = recvMulti
	s.flags = sqeBufSelect
	s.bufGroup = 0
	s.userData = ud(kRecv, side, id)
	c.recvOn[side] = true
	c.refs++
}

func (lp *loop) sendHead(id uint32, dir int) {
	c := lp.conns[id]
	d := &c.d[dir]
	if d.inflight || len(d.q) == 0 {
		if !d.inflight && len(d.q) == 0 && d.eof && !d.shut {
			d.shut = true
			unix.Shutdown(c.fds[1-dir], unix.SHUT_WR)
			lp.maybeClose(id)
		}
		return
	}
	p := d.q[0]
	s := lp.r.get()
	s.opcode = opSend
	s.fd = int32(c.fds[1-dir])
	s.addr = uint64(uintptr(unsafe.Pointer(&lp.br.bufs[int(p.bid)*lp.br.size+p.off])))
	s.len = uint32(p.end - p.off)
	s.opFlags = unix.MSG_NOSIGNAL
	s.userData = ud(kSend, dir, id)
	d.inflight = true
	c.refs++
}

func (lp *loop) maybeClose(id uint32) {
	c := lp.conns[id]
	if c == nil {
		return
	}
	if c.d[0].shut && c.d[1].shut && c.closed == 0 {
		c.closed = 1
		unix.Close(c.fds[0])
		unix.Close(c.fds[1])
	}
	if c.closed == 1 && c.refs == 0 {
		for _, d := range c.d {
			for _, p := range d.q {
				lp.br.add(p.bid)
			}
		}
		delete(lp.conns, id)
	}
}

func (lp *loop) onAccept(res int32, flags uint32) {
	if flags&cqeFMore == 0 {
		lp.armAccept()
	}
	if res < 0 {
		return
	}
	cfd := int(res)
	be := lp.bes[lp.rr%len(lp.bes)]
	lp.rr++
	sfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		unix.Close(cfd)
		return
	}
	a := be.Addr().As4()
	if err := unix.Connect(sfd, &unix.SockaddrInet4{Port: int(be.Port()), Addr: a}); err != nil {
		unix.Close(cfd)
		unix.Close(sfd)
		return
	}
	unix.SetNonblock(sfd, true)
	unix.SetsockoptInt(sfd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	unix.SetsockoptInt(cfd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	lp.next++
	id := lp.next
	lp.conns[id] = &conn{fds: [2]int{cfd, sfd}}
	lp.armRecv(id, 0)
	lp.armRecv(id, 1)
}

func (lp *loop) onRecv(id uint32, side int, res int32, flags uint32) {
	c := lp.conns[id]
	c.refs--
	more := flags&cqeFMore != 0
	if more {
		c.refs++
	}
	if flags&cqeFBuffer != 0 {
		bid := uint16(flags >> 16)
		if res > 0 && c.closed == 0 {
			c.d[side].q = append(c.d[side].q, pend{bid: bid, end: int(res)})
			lp.sendHead(id, side)
		} else {
			lp.br.add(bid)
		}
	}
	if res == 0 || (res < 0 && res != -int32(unix.ENOBUFS)) {
		c.d[side].eof = true
		if res < 0 {
			// error: finish both
			c.d[0].eof, c.d[1].eof = true, true
		}
		lp.sendHead(id, side)
		lp.maybeClose(id)
		return
	}
	if !more && c.closed == 0 {
		lp.armRecv(id, side)
	}
	if c.closed == 1 {
		lp.maybeClose(id)
	}
}

func (lp *loop) onSend(id uint32, dir int, res int32) {
	c := lp.conns[id]
	c.refs--
	d := &c.d[dir]
	d.inflight = false
	if res < 0 {
		for _, p := range d.q {
			lp.br.add(p.bid)
		}
		d.q = d.q[:0]
		d.eof, d.shut = true, true
		c.d[1-dir].eof = true
		lp.sendHead(id, 1-dir)
		lp.maybeClose(id)
		return
	}
	p := &d.q[0]
	p.off += int(res)
	if p.off >= p.end {
		lp.br.add(p.bid)
		copy(d.q, d.q[1:])
		d.q = d.q[:len(d.q)-1]
	}
	lp.sendHead(id, dir)
	if c.closed == 1 {
		lp.maybeClose(id)
	}
}

func (lp *loop) run() {
	runtime.LockOSThread()
	lp.armAccept()
	for {
		lp.br.publish()
		lp.r.enter(1)
		head := atomic.LoadUint32(lp.r.cqHead)
		tail := atomic.LoadUint32(lp.r.cqTail)
		for ; head != tail; head++ {
			e := lp.r.cqes[head&lp.r.cqMask]
			kind := int(e.userData >> 56)
			side := int(e.userData>>48) & 0xff
			id := uint32(e.userData)
			switch kind {
			case kAccept:
				lp.onAccept(e.res, e.flags)
			case kRecv:
				lp.onRecv(id, side, e.res, e.flags)
			case kSend:
				lp.onSend(id, side, e.res)
			}
		}
		atomic.StoreUint32(lp.r.cqHead, head)
	}
}

func main() {
	listen := flag.String("l", "127.0.0.1:19500", "listen")
	backs := flag.String("b", "127.0.0.1:18081,127.0.0.1:18082,127.0.0.1:18083", "backends")
	loops := flag.Int("n", 2, "loops")
	defer_ := flag.Bool("defer", true, "DEFER_TASKRUN")
	flag.Parse()
	var bes []netip.AddrPort
	for _, b := range strings.Split(*backs, ",") {
		bes = append(bes, netip.MustParseAddrPort(b))
	}
	la := netip.MustParseAddrPort(*listen)
	done := make(chan struct{})
	for i := 0; i < *loops; i++ {
		go func(i int) {
			runtime.LockOSThread()
			fl := uint32(0)
			if *defer_ {
				fl = setupSingleIssuer | setupDeferTaskrun
			}
			r, err := newRing(1024, fl)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			br, err := newBufRing(r, 0, 1024, 16384)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			fd, _ := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
			unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
			unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
			if err := unix.Bind(fd, &unix.SockaddrInet4{Port: int(la.Port()), Addr: la.Addr().As4()}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			unix.Listen(fd, 1024)
			lp := &loop{r: r, br: br, conns: map[uint32]*conn{}, lnfd: fd, bes: bes, rr: i}
			lp.run()
		}(i)
	}
	<-done
}

package netif

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// addBatch is how many RTM_NEWADDR requests AddVIPs writes in one
// sendmsg(2). The kernel handles the requests of one write in turn, in
// the writer's system call, and queues one acknowledgement per request on
// the socket; 64 of them fit the default receive buffer many times over,
// so none is dropped for want of room.
const addBatch = 64

// batchSock is a netlink socket of its own for AddVIPs, opened with the
// handle (so in its namespace) and used under its mutex.
type batchSock struct {
	mu  sync.Mutex
	fd  int
	seq uint32
	buf []byte
}

func openBatchSock() (*batchSock, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink socket for batched adds: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink socket for batched adds: bind: %w", err)
	}
	// The kernel answers in the writer's system call, so the answers are
	// there when we read; the timeout only keeps a lost one from stalling
	// the caller for ever.
	tv := unix.NsecToTimeval(int64(batchTimeout))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink socket for batched adds: receive timeout: %w", err)
	}
	// Errors then carry the header of the failed request, not all of it.
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_CAP_ACK, 1)
	return &batchSock{fd: fd, buf: make([]byte, 8192)}, nil
}

func (s *batchSock) close() {
	if s != nil {
		unix.Close(s.fd)
	}
}

// AddVIPs adds vips as AddVIP adds each one (IPv6 with IFA_F_NODAD; an
// address already there is not an error), but writes the requests back to
// back, addBatch per system call, and then reads their answers, instead of
// one round trip per VIP: a takeover of thousands of VIPs spent about a
// millisecond per round trip on a loaded machine. done is called once for
// each VIP, in order, as its answer arrives, with nil when the VIP is on
// its interface and otherwise an error naming it; a caller can announce
// each VIP as soon as it is added.
func (h *Handle) AddVIPs(vips []VIP, done func(i int, err error)) {
	for start := 0; start < len(vips); start += addBatch {
		end := min(start+addBatch, len(vips))
		h.addChunk(vips[start:end], func(i int, err error) { done(start+i, err) })
	}
}

// addChunk adds at most addBatch VIPs in one write.
func (h *Handle) addChunk(vips []VIP, done func(i int, err error)) {
	s := h.batch
	s.mu.Lock()
	defer s.mu.Unlock()
	first := s.seq + 1
	msgs := s.buf[:0]
	sent := make([]bool, len(vips))
	errs := make([]error, len(vips))
	for i, v := range vips {
		if err := v.Validate(); err != nil {
			errs[i] = fmt.Errorf("add VIP: %w", err)
			continue
		}
		l, _, err := h.vipLink(v.Dev)
		if err != nil {
			errs[i] = fmt.Errorf("add VIP %s: %w", v, err)
			continue
		}
		msgs = appendNewAddr(msgs, first+uint32(i), uint32(l.Attrs().Index), v)
		sent[i] = true
	}
	s.seq = first + uint32(len(vips))
	s.buf = msgs[:0]
	if len(msgs) > 0 {
		if err := s.exchange(msgs, first, sent, errs); err != nil {
			for i := range vips {
				if sent[i] && errs[i] == nil {
					errs[i] = err
				}
			}
		}
	}
	for i, v := range vips {
		err := errs[i]
		switch {
		case errors.Is(err, errRetryOne):
			// The cached interface may be gone (recreated): AddVIP looks
			// it up again.
			h.forgetLink(v.Dev)
			err = h.AddVIP(v)
		case err != nil && sent[i]:
			err = fmt.Errorf("add VIP %s: %w", v, err)
		}
		done(i, err)
	}
}

// errRetryOne marks a VIP whose request failed with ENODEV or EINVAL,
// which a stale interface index explains; it is tried again alone.
var errRetryOne = errors.New("interface index may be stale")

// batchTimeout bounds the wait for the kernel's answers.
const batchTimeout = 10e9 // 10 s

// exchange writes msgs and reads one answer for each request sent: nil
// (acknowledged), or the error it carries (EEXIST counts as added). It
// fills errs and returns an error only when the socket itself failed.
func (s *batchSock) exchange(msgs []byte, first uint32, sent []bool, errs []error) error {
	want := 0
	for _, ok := range sent {
		if ok {
			want++
		}
	}
	if err := unix.Sendto(s.fd, msgs, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return os.NewSyscallError("sendto", err)
	}
	rb := make([]byte, 16384)
	got := make([]bool, len(sent))
	for want > 0 {
		n, _, err := unix.Recvfrom(s.fd, rb, 0)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return os.NewSyscallError("recvfrom", err)
		}
		ms, err := parseAcks(rb[:n])
		if err != nil {
			return err
		}
		for _, m := range ms {
			i := int(m.seq - first)
			if m.seq < first || i >= len(sent) || !sent[i] || got[i] {
				continue // not ours (an answer to an earlier, abandoned write)
			}
			got[i] = true
			want--
			switch {
			case m.errno == 0, m.errno == unix.EEXIST:
			case m.errno == unix.ENODEV || m.errno == unix.EINVAL:
				errs[i] = fmt.Errorf("%w: %w", errRetryOne, m.errno)
			default:
				errs[i] = m.errno
			}
		}
	}
	return nil
}

type ack struct {
	seq   uint32
	errno unix.Errno
}

// parseAcks reads the NLMSG_ERROR answers (error 0: acknowledged) in b.
func parseAcks(b []byte) ([]ack, error) {
	var out []ack
	for len(b) >= unix.NLMSG_HDRLEN {
		l := int(binary.NativeEndian.Uint32(b[0:4]))
		if l < unix.NLMSG_HDRLEN || l > len(b) {
			return out, fmt.Errorf("netlink answer of %d bytes in a read of %d: malformed", l, len(b))
		}
		typ := binary.NativeEndian.Uint16(b[4:6])
		seq := binary.NativeEndian.Uint32(b[8:12])
		if typ == unix.NLMSG_ERROR && l >= unix.NLMSG_HDRLEN+4 {
			code := int32(binary.NativeEndian.Uint32(b[16:20]))
			out = append(out, ack{seq: seq, errno: unix.Errno(-code)})
		}
		b = b[min(nlAlign(l), len(b)):]
	}
	return out, nil
}

func nlAlign(n int) int { return (n + 3) &^ 3 }

// appendNewAddr appends an RTM_NEWADDR request for v on the interface of
// index ifIndex to b: the attributes nlAddr gives the library for AddVIP.
func appendNewAddr(b []byte, seq, ifIndex uint32, v VIP) []byte {
	start := len(b)
	b = binary.NativeEndian.AppendUint32(b, 0) // length, set below
	b = binary.NativeEndian.AppendUint16(b, unix.RTM_NEWADDR)
	b = binary.NativeEndian.AppendUint16(b, unix.NLM_F_REQUEST|unix.NLM_F_ACK|unix.NLM_F_CREATE|unix.NLM_F_EXCL)
	b = binary.NativeEndian.AppendUint32(b, seq)
	b = binary.NativeEndian.AppendUint32(b, 0) // port id: the kernel fills it
	a := v.Prefix.Addr()
	family, raw := byte(unix.AF_INET6), a.AsSlice()
	if a.Is4() {
		family = unix.AF_INET
	}
	var flags uint32
	if a.Is6() {
		flags |= unix.IFA_F_NODAD
	}
	if v.NoPrefixRoute {
		flags |= unix.IFA_F_NOPREFIXROUTE
	}
	scope, _ := scopeValue(v.Scope)
	b = append(b, family, byte(v.Prefix.Bits()), byte(flags), byte(scope))
	b = binary.NativeEndian.AppendUint32(b, ifIndex)
	b = appendAttr(b, unix.IFA_LOCAL, raw)
	b = appendAttr(b, unix.IFA_ADDRESS, raw)
	if flags > 0xff {
		b = appendAttr(b, unix.IFA_FLAGS, binary.NativeEndian.AppendUint32(nil, flags))
	}
	if a.Is4() {
		if v.Broadcast.IsValid() && !v.Broadcast.IsUnspecified() {
			b = appendAttr(b, unix.IFA_BROADCAST, v.Broadcast.AsSlice())
		}
		if v.Label != "" {
			b = appendAttr(b, unix.IFA_LABEL, append([]byte(v.Label), 0))
		}
	} else if !v.Preferred {
		// struct ifa_cacheinfo: preferred 0 (deprecated, as keepalived
		// adds them), valid forever.
		ci := binary.NativeEndian.AppendUint32(nil, 0)
		ci = binary.NativeEndian.AppendUint32(ci, lifetimeForever)
		ci = append(ci, make([]byte, 8)...)
		b = appendAttr(b, unix.IFA_CACHEINFO, ci)
	}
	binary.NativeEndian.PutUint32(b[start:], uint32(len(b)-start))
	return b
}

// appendAttr appends one netlink attribute, padded to 4 bytes.
func appendAttr(b []byte, typ uint16, data []byte) []byte {
	b = binary.NativeEndian.AppendUint16(b, uint16(4+len(data)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

package logging

import (
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// This file sends haproxy's log messages to the `log` targets of the
// configuration, as syslog datagrams in haproxy 2.6's format (RFC 3164,
// measured: TestSyslogMatchesHaproxy):
//
//	<PRI>Mmm dd hh:mm:ss TAG[PID]: MESSAGE\n
//
// PRI is facility*8+level, the day is space-padded, the time is local,
// there is no host name (haproxy sends one only with log-send-hostname),
// and the datagram ends with a newline. An explicit `format rfc3164`
// adds haproxy's host name field, "localhost " before TAG (measured,
// TestLogLenMatchesHaproxy). `format raw` sends MESSAGE\n alone. stdout and stderr targets get the same bytes as a line.
//
// TAG is the configuration's log-tag, "haproxy" by default. haproxy's
// default is its program name; vipstack stands in for haproxy with
// haproxy's configuration and sends haproxy's messages, and whatever reads
// the log socket (OpenShift's sidecar, a syslog daemon's rules, a log
// shipper's haproxy parser) keys on "haproxy[", so vipstack keeps that
// tag. The PID is vipstack's own.

// DefaultTag is the syslog tag without log-tag.
const DefaultTag = "haproxy"

// Long lines are cut as haproxy 2.6.12 cuts them (measured,
// TestLongLogLineMatchesHaproxy and TestLogLenMatchesHaproxy), in two
// steps:
//
//   - the message (a connection's line, a check's) is built in one buffer
//     for every target, of the largest `len` in the configuration or 1024
//     if larger (haproxy's max_syslog_len), and holds one byte less than
//     that;
//   - each target's datagram, the RFC 3164 header and the message, or the
//     message alone with `format raw`, is cut to the target's own `len`
//     (1024 by default), and the newline comes past it.
//
// So with no `len` anywhere, an RFC 3164 datagram of a long line is 1025
// bytes and a raw one 1024 (the message's 1023 and the newline); with
// `len 2000` on another target, a default raw target's is 1025.

// LineMax is the message buffer's size for targets: the largest of
// their `len` and lbconfig.DefaultLogLen.
func LineMax(cfg *lbconfig.Config) int {
	n := lbconfig.DefaultLogLen
	add := func(ts []lbconfig.LogTarget) {
		for _, t := range ts {
			n = max(n, t.Len)
		}
	}
	for _, f := range cfg.Frontends {
		add(f.LogTargets)
	}
	for _, m := range cfg.Monitors {
		add(m.LogTargets)
	}
	for _, s := range cfg.Stats {
		add(s.LogTargets)
	}
	for _, b := range cfg.Backends {
		add(b.LogTargets)
	}
	return n
}

// Retry is how long a log target that could not be reached is left
// alone before the next message tries it again; messages to it in
// between are dropped and counted.
const Retry = time.Second

// Sink is one socket (or stream) that `log` lines send to: the lines
// naming the same target share it, and it outlives reloads while some
// line names it.
type Sink struct {
	network, address string
	w                io.Writer // stdout and stderr targets
	// report tells the operator, on vipstack's own log, that the target
	// failed (err set) or works again (err nil).
	report func(s *Sink, err error)

	mu      sync.Mutex // guards the fields below; held while sending
	conn    net.Conn
	closed  bool
	failing bool      // the last attempt failed and was reported
	retryAt time.Time // when failing, the next attempt
}

// NewSink is the sink of a `log` target: network and address to dial, or,
// for the stdout and stderr targets (network "stdout", "stderr"), w.
// report tells the operator that the target failed (err set) or works
// again (err nil).
func NewSink(network, address string, w io.Writer, report func(s *Sink, err error)) *Sink {
	return &Sink{network: network, address: address, w: w, report: report}
}

func (s *Sink) String() string {
	if s.w != nil {
		return s.network
	}
	return s.address
}

// send writes one datagram; it reports whether it went out. A socket that
// fails is closed, reported once and tried again on a message after
// Retry.
func (s *Sink) send(b []byte, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.w != nil {
		_, err := s.w.Write(b)
		return err == nil
	}
	if s.failing && now.Before(s.retryAt) {
		return false
	}
	err := s.write(b)
	switch {
	case err != nil && !s.failing:
		s.failing = true
		s.report(s, err)
	case err == nil && s.failing:
		s.failing = false
		s.report(s, nil)
	}
	if err != nil {
		s.retryAt = now.Add(Retry)
		return false
	}
	return true
}

// write sends b on the socket, dialing it first when needed.
func (s *Sink) write(b []byte) error {
	if s.conn == nil {
		c, err := net.Dial(s.network, s.address)
		if err != nil {
			return err
		}
		s.conn = c
	}
	// A reader that does not keep up fills the socket: wait a little,
	// then drop (haproxy drops at once; this runs off the relay's path).
	s.conn.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	_, err := s.conn.Write(b)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		// The reader went away (ECONNREFUSED, ENOENT after a
		// restart of the reader): dial again next time.
		s.conn.Close()
		s.conn = nil
	}
	return err
}

// Close closes the socket; the sink sends nothing more.
func (s *Sink) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}

// Dest is one `log` line: a sink and what to send there.
type Dest struct {
	sink            *Sink
	raw             bool
	host            bool // format rfc3164: the header has haproxy's host name field
	facility        int
	level, minLevel int
	tag             string
	hostname        string // log-send-hostname's, "" for none
	// maxLen is the target's `len`; lineMax is LineMax's.
	maxLen, lineMax int
}

// NewDest is the `log` line t sending to s: tag is the syslog tag
// (DefaultTag without log-tag), lineMax the configuration's LineMax.
func NewDest(s *Sink, t lbconfig.LogTarget, tag string, lineMax int) Dest {
	maxLen := t.Len
	if maxLen == 0 {
		maxLen = lbconfig.DefaultLogLen
	}
	return Dest{sink: s, raw: t.Raw, host: t.RFC3164, facility: t.Facility, level: t.Level, minLevel: t.MinLevel, tag: tag,
		maxLen: maxLen, lineMax: lineMax}
}

// WithHostname is d with name in its header (haproxy's
// `log-send-hostname`), in either header format; "" leaves d as it is.
func (d Dest) WithHostname(name string) Dest {
	if name != "" {
		d.hostname, d.host = name, true
	}
	return d
}

// Dests are a proxy's log lines; nil or empty sends nothing.
type Dests []Dest

// deliver sends one queued message, queued at (on the LB's clock, which
// also paces a failed target's retries), to each of its targets that
// takes its level; it reports how many it could not send. buf is scratch
// space.
func deliver(to *Dests, level int, at time.Time, msg []byte, pid int, buf []byte) ([]byte, int) {
	failed := 0
	for _, d := range *to {
		if level > d.level {
			continue
		}
		buf = appendDatagram(buf[:0], d, level, at, pid, msg)
		if !d.sink.send(buf, at) {
			failed++
		}
	}
	return buf, failed
}

// appendDatagram formats msg for d: the RFC 3164 header unless raw and
// the message, cut as haproxy cuts them (above LineMax), and a
// newline. A Dest without lengths takes haproxy's defaults.
func appendDatagram(b []byte, d Dest, level int, at time.Time, pid int, msg []byte) []byte {
	maxLen, lineMax := d.maxLen, d.lineMax
	if maxLen == 0 {
		maxLen = lbconfig.DefaultLogLen
	}
	if lineMax == 0 {
		lineMax = max(maxLen, lbconfig.DefaultLogLen)
	}
	if len(msg) > lineMax-1 {
		msg = msg[:lineMax-1]
	}
	start := len(b)
	if !d.raw {
		b = append(b, '<')
		b = strconv.AppendInt(b, int64(d.facility*8+max(level, d.minLevel)), 10)
		b = append(b, '>')
		b = at.AppendFormat(b, "Jan _2 15:04:05 ")
		switch {
		case d.hostname != "":
			b = append(b, d.hostname...)
			b = append(b, ' ')
		case d.host:
			b = append(b, "localhost "...)
		}
		b = append(b, d.tag...)
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(pid), 10)
		b = append(b, "]: "...)
	}
	room := max(maxLen-(len(b)-start), 0)
	if len(msg) > room {
		msg = msg[:room]
	}
	b = append(b, msg...)
	return append(b, '\n')
}

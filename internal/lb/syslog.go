package lb

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vipstack/vipstack/internal/healthcheck"
	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lb/web"
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

// defaultLogTag is the syslog tag without log-tag.
const defaultLogTag = "haproxy"

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

// logLineMax is the message buffer's size for targets: the largest of
// their `len` and lbconfig.DefaultLogLen.
func logLineMax(cfg *lbconfig.Config) int {
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

// logRetry is how long a log target that could not be reached is left
// alone before the next message tries it again; messages to it in
// between are dropped and counted.
const logRetry = time.Second

// logSink is one socket (or stream) that `log` lines send to: the lines
// naming the same target share it, and it outlives reloads while some
// line names it.
type logSink struct {
	network, address string
	w                io.Writer // stdout and stderr targets
	// report tells the operator, on vipstack's own log, that the target
	// failed (err set) or works again (err nil).
	report func(s *logSink, err error)

	mu      sync.Mutex // guards the fields below; held while sending
	conn    net.Conn
	closed  bool
	failing bool      // the last attempt failed and was reported
	retryAt time.Time // when failing, the next attempt
}

func (s *logSink) String() string {
	if s.w != nil {
		return s.network
	}
	return s.address
}

// send writes one datagram; it reports whether it went out. A socket that
// fails is closed, reported once and tried again on a message after
// logRetry.
func (s *logSink) send(b []byte, now time.Time) bool {
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
		s.retryAt = now.Add(logRetry)
		return false
	}
	return true
}

// write sends b on the socket, dialing it first when needed.
func (s *logSink) write(b []byte) error {
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

func (s *logSink) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}

// logDest is one `log` line: a sink and what to send there.
type logDest struct {
	sink            *logSink
	raw             bool
	host            bool // format rfc3164: the header has haproxy's host name field
	facility        int
	level, minLevel int
	tag             string
	// maxLen is the target's `len`; lineMax is logLineMax's.
	maxLen, lineMax int
}

// logDests are a proxy's log lines; nil or empty sends nothing.
type logDests []logDest

// logView is the log configuration in force: the backends' lines (the
// frontends' are in their feConfig).
type logView struct {
	backends map[string]*logDests
	// fronts are the frontends', monitors' and stats sections' lines
	// by name, for the soft stop's lines.
	fronts map[string]*logDests
}

// applyLogs opens (or keeps) the sinks cfg's targets name, closes those no
// longer named, and returns the lines of each frontend and of each monitor
// and stats section, by name (they share haproxy's frontend names); the
// backends' are stored for their servers. It runs under l.mu.
func (l *LB) applyLogs(cfg *lbconfig.Config) map[string]*logDests {
	tag := cfg.LogTag
	if tag == "" {
		tag = defaultLogTag
	}
	lineMax := logLineMax(cfg)
	sinks := map[string]*logSink{}
	dests := func(ts []lbconfig.LogTarget) *logDests {
		if len(ts) == 0 {
			return nil
		}
		out := make(logDests, 0, len(ts))
		for _, t := range ts {
			key := t.Network + " " + t.Address
			s := sinks[key]
			if s == nil {
				s = l.sinks[key]
			}
			if s == nil {
				s = &logSink{network: t.Network, address: t.Address, report: l.reportSink}
				switch t.Network {
				case "stdout":
					s.w = l.opts.Stdout
				case "stderr":
					s.w = l.opts.Stderr
				}
			}
			sinks[key] = s
			maxLen := t.Len
			if maxLen == 0 {
				maxLen = lbconfig.DefaultLogLen
			}
			out = append(out, logDest{sink: s, raw: t.Raw, host: t.RFC3164, facility: t.Facility, level: t.Level, minLevel: t.MinLevel, tag: tag,
				maxLen: maxLen, lineMax: lineMax})
		}
		return &out
	}
	fronts := map[string]*logDests{}
	for _, f := range cfg.Frontends {
		fronts[f.Name] = dests(f.LogTargets)
	}
	for _, m := range cfg.Monitors {
		fronts[m.Name] = dests(m.LogTargets)
	}
	for _, s := range cfg.Stats {
		fronts[s.Name] = dests(s.LogTargets)
	}
	backs := map[string]*logDests{}
	for _, b := range cfg.Backends {
		backs[b.Name] = dests(b.LogTargets)
	}
	for k, s := range l.sinks {
		if sinks[k] == nil {
			s.close()
		}
	}
	l.sinks = sinks
	l.logs.Store(&logView{backends: backs, fronts: fronts})
	return fronts
}

// reportSink says on vipstack's own log that a log target failed, once
// until it works again, and when it does.
func (l *LB) reportSink(s *logSink, err error) {
	if err != nil {
		l.log.Warn("log target: cannot send; its messages are dropped (counted in vipstack_lb_access_log_dropped_total) and it is tried again every second",
			"target", s.String(), "err", err)
		return
	}
	l.log.Info("log target: sending again", "target", s.String())
}

// backendLog is where backend's messages go.
func (l *LB) backendLog(backend string) *logDests {
	v := l.logs.Load()
	if v == nil {
		return nil
	}
	return v.backends[backend]
}

// sendLog queues msg (without newline) at level for to's targets.
func (l *LB) sendLog(to *logDests, level int, msg []byte) {
	if to == nil || len(*to) == 0 {
		return
	}
	l.accessLog.add(to, level, l.clk.Now(), msg)
}

// deliver sends one queued message, queued at (on the LB's clock, which
// also paces a failed target's retries), to each of its targets that
// takes its level; it reports how many it could not send. buf is scratch
// space.
func deliver(to *logDests, level int, at time.Time, msg []byte, pid int, buf []byte) ([]byte, int) {
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
// the message, cut as haproxy cuts them (above logLineMax), and a
// newline. A logDest without lengths takes haproxy's defaults.
func appendDatagram(b []byte, d logDest, level int, at time.Time, pid int, msg []byte) []byte {
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
		if d.host {
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

// logConnect sends haproxy's line for a connection accepted by a frontend
// without a log format (measured; sent at accept whatever dontlognull
// says):
//
//	Connect from 127.0.0.1:56490 to 127.0.0.1:17001 (fe/TCP)
func (f *frontend) logConnect(cn *conn, cl *connLog) {
	var buf [160]byte
	b := append(buf[:0], "Connect from "...)
	b = appendAddrPort(b, cn.client())
	b = append(b, " to "...)
	b = appendAddrPort(b, cn.local)
	b = append(b, " ("...)
	b = append(b, f.name...)
	b = append(b, "/TCP)"...)
	f.lb.sendLog(cl.to, lbconfig.LevelInfo, b)
}

// logHTTPConnect sends haproxy's line for a request to a monitor or stats
// section (level info), which haproxy 2.6 sends without a log format
// (measured, TestSyslogMatchesHaproxy): one per request, a keep-alive
// connection's second request included; none for a connection that sends
// nothing, an incomplete request or one haproxy answers 400, whatever
// dontlognull says; the same for a stats page's 200, 401 and other URIs:
//
//	Connect from 127.0.0.1:37074 to 127.0.0.1:18091 (health_check_http_url/HTTP)
func (l *LB) logHTTPConnect(to *logDests, section string, c net.Conn) {
	var buf [160]byte
	b := append(buf[:0], "Connect from "...)
	b = appendAddrPort(b, tcpAddrPort(c.RemoteAddr()))
	b = append(b, " to "...)
	b = appendAddrPort(b, tcpAddrPort(c.LocalAddr()))
	b = append(b, " ("...)
	b = append(b, section...)
	b = append(b, "/HTTP)"...)
	l.sendLog(to, lbconfig.LevelInfo, b)
}

// tcpAddrPort is a's address and port, or none when a is not TCP's.
func tcpAddrPort(a net.Addr) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.AddrPort()
	}
	return netip.AddrPort{}
}

// appendAddrPort writes ADDR:PORT as haproxy's "Connect from" line does:
// IPv6 without brackets, and an IPv4 client of an IPv6 listener (`bind
// :::PORT v4v6`) IPv4-mapped, as the socket gives it (haproxy 2.6.12,
// measured: "Connect from ::1:49850 to ::1:27010 (fe/TCP)", "Connect
// from ::ffff:127.0.0.1:37374 to ::ffff:127.0.0.1:27010 (fe/TCP)").
func appendAddrPort(b []byte, ap netip.AddrPort) []byte {
	a := ap.Addr()
	if !a.IsValid() {
		return append(b, '-')
	}
	b = a.AppendTo(b)
	b = append(b, ':')
	return strconv.AppendUint(b, uint64(ap.Port()), 10)
}

// appendCheck writes haproxy's account of a check result: reason, code,
// info and duration, as its health check and server state lines show it
// (measured):
//
//	, reason: Layer7 wrong status, code: 503, info: "Service Unavailable", check duration: 1ms
//
// haproxy shows no info for a passed check nor for "Layer7 invalid
// response". With check-ssl, haproxy 2.6.12 says the same for every
// handshake that fails, whatever the TLS library's reason (a certificate
// its CA file does not verify, a server answering in plain HTTP, closing
// or resetting the connection after it read the ClientHello), and nothing
// for a handshake that times out (measured,
// TestHealthCheckTLSLogMatchesHaproxy):
//
//	, reason: Layer6 invalid response, info: "SSL handshake failure", check duration: 2ms
//	, reason: Layer6 timeout, check duration: 1001ms
//
// Not matched: a server that resets the connection before it reads the
// ClientHello gets "SSL handshake failure (Connection reset by peer)" from
// haproxy (measured), as the reset then fails haproxy's own send; vipstack
// sees such a reset on its read, like any other, and cannot tell them
// apart.
func appendCheck(b []byte, r healthcheck.Result) []byte {
	b = append(b, ", reason: "...)
	b = append(b, healthcheck.Description(r.Status)...)
	if r.Code != 0 {
		b = append(b, ", code: "...)
		b = strconv.AppendInt(b, int64(r.Code), 10)
	}
	info := healthcheck.HaproxyInfo(r)
	if r.Status == healthcheck.L7RSP {
		info = ""
	}
	if !r.OK && info != "" {
		b = append(b, `, info: "`...)
		b = appendLogEscaped(b, info)
		b = append(b, '"')
	}
	b = append(b, ", check duration: "...)
	b = strconv.AppendInt(b, r.Duration.Milliseconds(), 10)
	return append(b, "ms"...)
}

// appendLogEscaped writes a check's info as haproxy 2.6.12 writes it in
// its log lines: a control character, '"', '<', '>', DEL and every byte
// above it as <XX>, in upper-case hex (measured: a server answering its
// check "503 <b>\x1b[31m..." is logged `info: "<3C>b<3E><1B>[31m..."`,
// its last_chk keeps the bytes). The info comes from the server's answer:
// raw, it could put terminal escapes or a quote that ends the field into
// the log.
func appendLogEscaped(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < ' ' || c >= 0x7f || c == '"' || c == '<' || c == '>' {
			b = append(b, '<', hex[c>>4], hex[c&0xf], '>')
			continue
		}
		b = append(b, c)
	}
	return b
}

// checkStatus is haproxy's "status: 2/2 UP" part: while UP, the failures
// it can still take out of fall; while DOWN, the passes it has out of
// rise.
func appendCheckStatus(b []byte, st healthcheck.State) []byte {
	if st.Up {
		b = strconv.AppendInt(b, int64(st.Fall-st.Failures), 10)
		b = append(b, '/')
		b = strconv.AppendInt(b, int64(st.Fall), 10)
		return append(b, " UP"...)
	}
	b = strconv.AppendInt(b, int64(st.Successes), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(st.Rise), 10)
	return append(b, " DOWN"...)
}

// healthCheckLine is option log-health-checks' line (level notice):
//
//	Health check for server be/s1 failed, reason: Layer4 connection problem, info: "Connection refused", check duration: 0ms, status: 0/2 DOWN.
func healthCheckLine(id string, r healthcheck.Result, st healthcheck.State) []byte {
	b := append([]byte("Health check for server "), id...)
	if r.OK {
		b = append(b, " succeeded"...)
	} else {
		b = append(b, " failed"...)
	}
	b = appendCheck(b, r)
	b = append(b, ", status: "...)
	b = appendCheckStatus(b, st)
	return append(b, '.')
}

// serverStateLine is haproxy's line for a server going UP (level notice)
// or DOWN (level alert); with log-health-checks the check's account is
// left out, the health check line before it having given it (measured):
//
//	Server be/s1 is DOWN, reason: Layer4 connection problem, info: "Connection refused", check duration: 0ms. 1 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.
//	Server be/s1 is UP. 2 active and 0 backup servers online. 0 sessions requeued, 0 total in queue.
//
// vipstack has no backup servers and queues at the frontend: those
// counts are 0.
func serverStateLine(id string, st healthcheck.State, withCheck bool, upServers int, sessions int64) []byte {
	b := append([]byte("Server "), id...)
	if st.Up {
		b = append(b, " is UP"...)
	} else {
		b = append(b, " is DOWN"...)
	}
	if withCheck {
		b = appendCheck(b, st.Last)
	}
	b = append(b, ". "...)
	b = strconv.AppendInt(b, int64(upServers), 10)
	if st.Up {
		return append(b, " active and 0 backup servers online. 0 sessions requeued, 0 total in queue."...)
	}
	b = append(b, " active and 0 backup servers left. "...)
	b = strconv.AppendInt(b, sessions, 10)
	return append(b, " sessions active, 0 requeued, 0 remaining in queue."...)
}

// noServerLine is sent (level emerg) when a backend's last UP server goes
// DOWN.
func noServerLine(backend string) []byte {
	return append(append([]byte("backend "), backend...), " has no server available!"...)
}

// logLine is one message and its level.
type logLine struct {
	level int
	msg   string
}

// adminChange is a server's move between administrative states, as the
// log lines of haproxy 2.6 need it.
type adminChange struct {
	backend  string
	id       string           // be/s1
	from, to stats.AdminState // different
	up       bool             // its check's verdict before the move (UP without a check)
	sessions int64            // its connections
	before   int              // the backend's usable servers before the move
	after    int              // and after it
}

// adminLines are haproxy's messages for a runtime API change of a
// server's state (`set server be/s1 state ready|drain|maint`, `disable
// server`, `enable server`), measured with haproxy 2.6.12 (levels:
// 1 alert, 5 notice, 0 emerg):
//
//	ready -> maint, UP:    1 Server be/s1 is going DOWN for maintenance. 1 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.
//	drain -> maint, UP:    5 (the same line)
//	ready|drain -> maint, DOWN: 5 Server be/s1 was DOWN and now enters maintenance.
//	maint -> ready:        5 Server be/s1 is UP/READY (leaving forced maintenance).
//	maint -> drain:        5 Server be/s1 is UP/DRAIN (leaving forced maintenance).
//	                       5 Server be/s1 remains in forced drain mode.
//	ready -> drain, UP:    5 Server be/s1 enters drain state. 1 active and 0 backup servers online. 0 sessions requeued, 0 total in queue.
//	ready -> drain, DOWN:  5 Server be/s1 enters drain state. 1 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.
//	drain -> ready:        5 Server be/s1 is UP (leaving forced drain).  (DOWN: "is DOWN (leaving forced drain).")
//
// "N active" counts the backend's usable servers after the move (a
// drained server is not one: "Server be2/s1 enters drain state. 0 active
// ..."). When the move takes the backend's last usable server away,
// "backend be has no server available!" (emerg) follows. Leaving MAINT,
// a server whose check then fails gets the check's DOWN line after
// (server.go). vipstack has no backup servers and no server queue: those
// counts are 0.
func adminLines(c adminChange) []logLine {
	var out []logLine
	add := func(level int, parts ...string) {
		var b []byte
		b = append(b, "Server "...)
		b = append(b, c.id...)
		for _, p := range parts {
			b = append(b, p...)
		}
		out = append(out, logLine{level, string(b)})
	}
	left := func() string {
		return ". " + strconv.Itoa(c.after) + " active and 0 backup servers left. " +
			strconv.FormatInt(c.sessions, 10) + " sessions active, 0 requeued, 0 remaining in queue."
	}
	switch {
	case c.to == stats.AdminMaint && !c.up:
		add(lbconfig.LevelNotice, " was DOWN and now enters maintenance.")
	case c.to == stats.AdminMaint:
		level := lbconfig.LevelAlert
		if c.from == stats.AdminDrain {
			level = lbconfig.LevelNotice
		}
		add(level, " is going DOWN for maintenance", left())
	case c.from == stats.AdminMaint && c.to == stats.AdminReady:
		add(lbconfig.LevelNotice, " is UP/READY (leaving forced maintenance).")
	case c.from == stats.AdminMaint && c.to == stats.AdminDrain:
		add(lbconfig.LevelNotice, " is UP/DRAIN (leaving forced maintenance).")
		add(lbconfig.LevelNotice, " remains in forced drain mode.")
	case c.to == stats.AdminDrain && c.up:
		add(lbconfig.LevelNotice, " enters drain state. ", strconv.Itoa(c.after),
			" active and 0 backup servers online. 0 sessions requeued, 0 total in queue.")
	case c.to == stats.AdminDrain:
		add(lbconfig.LevelNotice, " enters drain state", left())
	case c.from == stats.AdminDrain && c.up:
		add(lbconfig.LevelNotice, " is UP (leaving forced drain).")
	case c.from == stats.AdminDrain:
		add(lbconfig.LevelNotice, " is DOWN (leaving forced drain).")
	}
	if c.before > 0 && c.after == 0 {
		out = append(out, logLine{lbconfig.LevelEmerg, string(noServerLine(c.backend))})
	}
	return out
}

// logStopped sends haproxy's soft stop lines (level warning) to each
// proxy's targets, in the configuration's order, as haproxy 2.6 sends them
// when SIGUSR1 starts its soft stop, all at once, while connections still
// run (measured, haproxy 2.6.12; SIGTERM, its hard stop, sends none):
//
//	Proxy fe stopped (cumulated conns: FE: 3, BE: 0).
//	Proxy health_check_http_url stopped (cumulated conns: FE: 6, BE: 1).
//	Proxy be stopped (cumulated conns: FE: 0, BE: 3).
//
// FE counts a frontend's (or monitor's, stats page's) accepted
// connections, BE the clients a backend took, each once whether a server
// took it or not (BackendStats.Clients: a client that found no server UP,
// logged "<NOSRV> ... SC", counts too, measured), or the requests a
// monitor or stats section passed to its serverless backend, answered
// 503.
func (l *LB) logStopped() {
	v, logs := l.view.Load(), l.logs.Load()
	if v == nil || v.cfg == nil || logs == nil {
		return
	}
	backends := map[string]uint64{}
	for _, b := range l.Snapshot().Backends {
		backends[b.Name] = b.Clients()
	}
	l.mu.Lock()
	counts := make(map[string]*web.Count, len(l.webCounts))
	for k, c := range l.webCounts {
		counts[k] = c
	}
	l.mu.Unlock()
	for _, key := range v.cfg.ProxyOrder() {
		kind, name, _ := strings.Cut(key, " ")
		var to *logDests
		var fe, be uint64
		switch kind {
		case "frontend":
			to = logs.fronts[name]
			for _, f := range v.frontends {
				if f.name == name {
					fe = f.tot.Load()
				}
			}
		case "backend":
			to = logs.backends[name]
			be = backends[name]
		default:
			to = logs.fronts[name]
			if c := counts[name]; c != nil {
				fe, be = c.Sessions()
			}
		}
		l.sendLog(to, lbconfig.LevelWarning, stoppedLine(name, fe, be))
	}
}

// logHardStopped sends, for each frontend that still has connections when
// a soft stop's deadline comes, haproxy's line (warning) to its targets,
// in the configuration's order, before they are closed (measured, haproxy
// 2.6.12 with hard-stop-after, a frontend with one connection and one
// with none: only the first sends its line, then its connection's, "K-"):
//
//	Proxy fe2 hard-stopped (1 remaining conns will be closed).
//
// haproxy's "soft-stop running for too long, performing a hard-stop." goes
// to global's targets only, which vipstack has no use for.
func (l *LB) logHardStopped() {
	v, logs := l.view.Load(), l.logs.Load()
	if v == nil || logs == nil {
		return
	}
	for _, f := range v.frontends {
		n := f.cur.Load()
		if n <= 0 {
			continue
		}
		b := append([]byte("Proxy "), f.name...)
		b = append(b, " hard-stopped ("...)
		b = strconv.AppendInt(b, n, 10)
		b = append(b, " remaining conns will be closed)."...)
		l.sendLog(logs.fronts[f.name], lbconfig.LevelWarning, b)
	}
}

// stoppedLine is haproxy's "Proxy NAME stopped" line.
func stoppedLine(name string, fe, be uint64) []byte {
	b := append([]byte("Proxy "), name...)
	b = append(b, " stopped (cumulated conns: FE: "...)
	b = strconv.AppendUint(b, fe, 10)
	b = append(b, ", BE: "...)
	b = strconv.AppendUint(b, be, 10)
	return append(b, ")."...)
}

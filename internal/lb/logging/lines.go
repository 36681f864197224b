package logging

import (
	"net"
	"net/netip"
	"strconv"

	"github.com/vipstack/vipstack/internal/healthcheck"
	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// AppendConnect writes haproxy's "Connect from" line of a connection
// from client to local, accepted by the proxy called name in mode (TCP
// for a frontend, HTTP for a monitor or stats section's request):
//
//	Connect from 127.0.0.1:56490 to 127.0.0.1:17001 (fe/TCP)
func AppendConnect(b []byte, client, local netip.AddrPort, name, mode string) []byte {
	b = append(b, "Connect from "...)
	b = AppendAddrPort(b, client)
	b = append(b, " to "...)
	b = AppendAddrPort(b, local)
	b = append(b, " ("...)
	b = append(b, name...)
	b = append(b, '/')
	b = append(b, mode...)
	return append(b, ')')
}

// TCPAddrPort is a's address and port, or none when a is not TCP's.
func TCPAddrPort(a net.Addr) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.AddrPort()
	}
	return netip.AddrPort{}
}

// AppendAddrPort writes ADDR:PORT as haproxy's "Connect from" line does:
// IPv6 without brackets, and an IPv4 client of an IPv6 listener (`bind
// :::PORT v4v6`) IPv4-mapped, as the socket gives it (haproxy 2.6.12,
// measured: "Connect from ::1:49850 to ::1:27010 (fe/TCP)", "Connect
// from ::ffff:127.0.0.1:37374 to ::ffff:127.0.0.1:27010 (fe/TCP)").
func AppendAddrPort(b []byte, ap netip.AddrPort) []byte {
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
	if r.Code != 0 || healthcheck.IsExternal(r.Status) {
		// haproxy shows an external check's exit status even when 0.
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

// HealthCheckLine is option log-health-checks' line (level notice):
//
//	Health check for server be/s1 failed, reason: Layer4 connection problem, info: "Connection refused", check duration: 0ms, status: 0/2 DOWN.
func HealthCheckLine(id string, r healthcheck.Result, st healthcheck.State) []byte {
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

// ServerStateLine is haproxy's line for a server going UP (level notice)
// or DOWN (level alert); with log-health-checks the check's account is
// left out, the health check line before it having given it (measured):
//
//	Server be/s1 is DOWN, reason: Layer4 connection problem, info: "Connection refused", check duration: 0ms. 1 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.
//	Server be/s1 is UP. 2 active and 0 backup servers online. 0 sessions requeued, 0 total in queue.
//
// vipstack has no backup servers and queues at the frontend: those
// counts are 0.
func ServerStateLine(id string, st healthcheck.State, withCheck bool, upServers int, sessions int64) []byte {
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

// NoServerLine is sent (level emerg) when a backend's last UP server goes
// DOWN.
func NoServerLine(backend string) []byte {
	return append(append([]byte("backend "), backend...), " has no server available!"...)
}

// Line is one message and its level.
type Line struct {
	Level int
	Msg   string
}

// AdminChange is a server's move between administrative states, as the
// log lines of haproxy 2.6 need it.
type AdminChange struct {
	Backend  string
	ID       string           // be/s1
	From, To stats.AdminState // different
	Up       bool             // its check's verdict before the move (UP without a check)
	Sessions int64            // its connections
	Before   int              // the backend's usable servers before the move
	After    int              // and after it
}

// AdminLines are haproxy's messages for a runtime API change of a
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
// (lb's server.go). vipstack has no backup servers and no server queue: those
// counts are 0.
func AdminLines(c AdminChange) []Line {
	var out []Line
	add := func(level int, parts ...string) {
		var b []byte
		b = append(b, "Server "...)
		b = append(b, c.ID...)
		for _, p := range parts {
			b = append(b, p...)
		}
		out = append(out, Line{level, string(b)})
	}
	left := func() string {
		return ". " + strconv.Itoa(c.After) + " active and 0 backup servers left. " +
			strconv.FormatInt(c.Sessions, 10) + " sessions active, 0 requeued, 0 remaining in queue."
	}
	switch {
	case c.To == stats.AdminMaint && !c.Up:
		add(lbconfig.LevelNotice, " was DOWN and now enters maintenance.")
	case c.To == stats.AdminMaint:
		level := lbconfig.LevelAlert
		if c.From == stats.AdminDrain {
			level = lbconfig.LevelNotice
		}
		add(level, " is going DOWN for maintenance", left())
	case c.From == stats.AdminMaint && c.To == stats.AdminReady:
		add(lbconfig.LevelNotice, " is UP/READY (leaving forced maintenance).")
	case c.From == stats.AdminMaint && c.To == stats.AdminDrain:
		add(lbconfig.LevelNotice, " is UP/DRAIN (leaving forced maintenance).")
		add(lbconfig.LevelNotice, " remains in forced drain mode.")
	case c.To == stats.AdminDrain && c.Up:
		add(lbconfig.LevelNotice, " enters drain state. ", strconv.Itoa(c.After),
			" active and 0 backup servers online. 0 sessions requeued, 0 total in queue.")
	case c.To == stats.AdminDrain:
		add(lbconfig.LevelNotice, " enters drain state", left())
	case c.From == stats.AdminDrain && c.Up:
		add(lbconfig.LevelNotice, " is UP (leaving forced drain).")
	case c.From == stats.AdminDrain:
		add(lbconfig.LevelNotice, " is DOWN (leaving forced drain).")
	}
	if c.Before > 0 && c.After == 0 {
		out = append(out, Line{lbconfig.LevelEmerg, string(NoServerLine(c.Backend))})
	}
	return out
}

// StoppedLine is haproxy's "Proxy NAME stopped" line.
func StoppedLine(name string, fe, be uint64) []byte {
	b := append([]byte("Proxy "), name...)
	b = append(b, " stopped (cumulated conns: FE: "...)
	b = strconv.AppendUint(b, fe, 10)
	b = append(b, ", BE: "...)
	b = strconv.AppendUint(b, be, 10)
	return append(b, ")."...)
}

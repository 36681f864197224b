package lbcli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/lb"
	lbstats "github.com/vipstack/vipstack/internal/lb/stats"
)

// show sess, as haproxy 2.6.12 answers it (measured on an operator and
// an admin socket with four clients relayed by a TCP frontend; a user
// socket gets "Permission denied"):
//
//   - `show sess` (or an argument that reads as 0: "0", "xyz"): a line per
//     session, "<ptr>: proto=tcpv4 src=<addr:port> fe=<frontend>
//     be=<backend> srv=<server> ts=.. epoch=.. age=2s calls=.. ...";
//   - `show sess all`, or an argument that reads as all ones ("-1"):
//     every session in detail, a block of lines each;
//   - `show sess <ptr>`: that session's block; the argument is read as
//     C's strtoul with base 0 ("0x55cd10bf6190" and its decimal form
//     both name it, "55cd10bf6190" reads as 55), and one that names no
//     session gets "Session not found.". Words after the first are
//     ignored.
//
// haproxy lists its CLI connections too, every one of them whichever
// socket it came from, the one asking included (measured):
//
//	0x..: proto=unix_stream src=unix:1 fe=GLOBAL be=<NONE> srv=<none> ts=00 ... age=0s ...
//	0x..: [date] id=1 proto=unix_stream source=unix:1
//	  frontend=GLOBAL (id=0 mode=tcp), listener=? (id=1) addr=unix:1
//	  backend=<NONE> (id=-1 mode=-)
//	  server=<NONE> (id=-1)
//
// vipstack lists the connections its relay holds (lb.Sessions), then
// its CLI connections (Clients), and writes of each line only the fields
// it has a true value for: see doc.go.

// showSess is `show sess [all|<id>]`.
func (s *Server) showSess(_ *session, args []string) string {
	var want uint64 // 0: the list, math.MaxUint64: all in detail
	if len(args) > 0 {
		if args[0] == "all" {
			want = math.MaxUint64
		} else {
			want = strtoul(args[0])
		}
	}
	sessions := s.opts.Balancer.Sessions()
	now := s.opts.Now()
	var clis []cliSession
	for _, c := range s.clients.list() {
		clis = append(clis, c.describe(now))
	}
	if want == 0 {
		var b strings.Builder
		for _, ss := range sessions {
			b.WriteString(sessLine(ss))
		}
		for _, c := range clis {
			b.WriteString(c.line())
		}
		return b.String()
	}
	snap := s.opts.Balancer.Snapshot()
	var b strings.Builder
	for _, ss := range sessions {
		if want == math.MaxUint64 || uint64(ss.ID) == want {
			b.WriteString(sessBlock(snap, ss))
		}
	}
	for _, c := range clis {
		if want == math.MaxUint64 || uint64(c.id) == want {
			b.WriteString(c.block())
		}
	}
	if b.Len() == 0 && want != math.MaxUint64 {
		return "Session not found.\n"
	}
	return b.String()
}

// line is a CLI connection's line of show sess: haproxy's fields but for
// those of its scheduler and buffers, as for the relayed connections.
func (c cliSession) line() string {
	return fmt.Sprintf("%#x: proto=%s src=%s fe=GLOBAL be=<NONE> srv=<none> age=%s\n", c.id, c.proto, c.src, humanTime(c.age))
}

// block is a CLI connection in detail, haproxy's lines cut as
// sessBlock cuts them; state=EST as haproxy's scb (its CLI applet) says.
func (c cliSession) block() string {
	return fmt.Sprintf("%#x: [%s] proto=%s source=%s\n"+
		"  frontend=GLOBAL (id=0 mode=tcp) addr=%s\n"+
		"  backend=<NONE> (id=-1 mode=-)\n"+
		"  server=<NONE> (id=-1)\n"+
		"  state=EST age=%s\n", c.id, c.accepted.Local().Format("02/Jan/2006:15:04:05.000000"), c.proto, c.src, c.addr, humanTime(c.age))
}

// shutdownSession is `shutdown session <id>`: the relayed connection or
// the CLI connection show sess names id is closed, both sockets of a
// relayed one. haproxy 2.6's answers (measured; level admin, "Permission
// denied" below it): "" when closed; "Session pointer expected (use 'show
// sess')." without an argument or with one that reads as 0 ("xyz",
// "all"); "No such session (use 'show sess')." for an id that names none
// ("0x1234", "-1"). The argument is read as show sess reads its own.
// A connection that closes itself gets its empty answer (and its prompt)
// before the end, as in haproxy.
func (s *Server) shutdownSession(sess *session, args []string) string {
	var id uint64
	if len(args) > 0 {
		id = strtoul(args[0])
	}
	if id == 0 {
		return "Session pointer expected (use 'show sess').\n"
	}
	if uint64(uintptr(id)) == id && s.opts.Balancer.ShutdownSession(uintptr(id)) {
		s.log.Info("connection shut down from the runtime API", "session", fmt.Sprintf("%#x", id))
		return ""
	}
	if c := s.clients.find(id); c != nil {
		if c == sess {
			sess.killed = true
		} else {
			_ = c.conn.Close()
		}
		s.log.Info("runtime API connection shut down from the runtime API", "session", fmt.Sprintf("%#x", id))
		return ""
	}
	return "No such session (use 'show sess').\n"
}

// strtoul reads s as C's strtoul(s, NULL, 0), which haproxy applies to
// show sess's argument: leading blanks, a sign, 0x for hex or 0 for
// octal, digits up to the first that is not one; 0 when there is none,
// all ones on overflow, and a minus negates (so "-1" is all ones).
func strtoul(s string) uint64 {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	base := uint64(10)
	switch {
	case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && digitVal(s[2]) < 16:
		base, s = 16, s[2:]
	case len(s) > 0 && s[0] == '0':
		base = 8
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		d := uint64(digitVal(s[i]))
		if d >= base {
			break
		}
		if n > (math.MaxUint64-d)/base {
			return math.MaxUint64
		}
		n = n*base + d
	}
	if neg {
		n = -n
	}
	return n
}

// digitVal is c's value as a digit of base up to 36, or 36.
func digitVal(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c|0x20 && c|0x20 <= 'z':
		return int(c|0x20-'a') + 10
	}
	return 36
}

func proto(ss lb.Session) string {
	if ss.Client.Addr().Is4() {
		return "tcpv4"
	}
	return "tcpv6"
}

// orNone is name, or haproxy's word for none.
func orNone(name, none string) string {
	if name == "" {
		return none
	}
	return name
}

// sessLine is a session's line of the list.
func sessLine(ss lb.Session) string {
	line := fmt.Sprintf("%#x: proto=%s src=%s fe=%s be=%s srv=%s", ss.ID, proto(ss), ss.Client,
		ss.Frontend, orNone(ss.Backend, "<NONE>"), orNone(ss.Server, "<none>"))
	if !ss.Accepted.IsZero() {
		line += " age=" + humanTime(ss.Age)
	}
	return line + "\n"
}

// sessBlock is a session in detail.
func sessBlock(snap lbstats.Snapshot, ss lb.Session) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%#x:", ss.ID)
	if !ss.Accepted.IsZero() {
		b.WriteString(" [" + ss.Accepted.Local().Format("02/Jan/2006:15:04:05.000000") + "]")
	}
	fmt.Fprintf(&b, " proto=%s source=%s\n", proto(ss), ss.Client)
	fmt.Fprintf(&b, "  frontend=%s (id=%d mode=tcp) addr=%s\n", ss.Frontend, snap.ProxyID(ss.Frontend), ss.Listener)
	if ss.Backend == "" {
		b.WriteString("  backend=<NONE> (id=-1 mode=-)\n")
	} else {
		fmt.Fprintf(&b, "  backend=%s (id=%d mode=tcp)", ss.Backend, snap.ProxyID(ss.Backend))
		if ss.Local.IsValid() {
			fmt.Fprintf(&b, " addr=%s", ss.Local)
		}
		b.WriteString("\n")
	}
	if ss.Server == "" {
		b.WriteString("  server=<NONE> (id=-1)\n")
	} else {
		fmt.Fprintf(&b, "  server=%s (id=%d) addr=%s\n", ss.Server, serverID(snap, ss.Backend, ss.Server), ss.ServerAddr)
	}
	state := "CON" // connecting
	if ss.Connected {
		state = "EST"
	}
	fmt.Fprintf(&b, "  state=%s", state)
	if !ss.Accepted.IsZero() {
		b.WriteString(" age=" + humanTime(ss.Age))
	}
	b.WriteString("\n")
	return b.String()
}

// serverID is the server's id (sid) in its backend, -1 if it is gone.
func serverID(snap lbstats.Snapshot, backend, server string) int {
	for _, be := range snap.Backends {
		if be.Name != backend {
			continue
		}
		for i, sv := range be.Servers {
			if sv.Name == server {
				return i + 1
			}
		}
	}
	return -1
}

// humanTime writes d as haproxy's human_time does for ages: at most two
// units of d, h, m and s, the largest first, skipping zero units, "0s"
// for less than a second (measured: age=2s, rx=23h59m).
func humanTime(d time.Duration) string {
	t := int64(max(d, 0) / time.Second)
	var b strings.Builder
	units := 2
	if t >= 86400 {
		b.WriteString(strconv.FormatInt(t/86400, 10) + "d")
		units--
	}
	if h := t % 86400 / 3600; units > 0 && h > 0 {
		b.WriteString(strconv.FormatInt(h, 10) + "h")
		units--
	}
	if m := t % 3600 / 60; units > 0 && m > 0 {
		b.WriteString(strconv.FormatInt(m, 10) + "m")
		units--
	}
	if sec := t % 60; units > 0 && sec > 0 || t == 0 {
		b.WriteString(strconv.FormatInt(sec, 10) + "s")
	}
	return b.String()
}

package logging

import (
	"net/netip"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// ConnLog is a frontend's connection log: where its lines go, and its
// compiled format, or none for haproxy's "Connect from" line at accept.
type ConnLog struct {
	To          *Dests
	Connect     bool // no format: the "Connect from" line at accept
	items       []lbconfig.LogItem
	DontLogNull bool
	// DontLogNormal and SeparateErrors are lbconfig.ConnLog's.
	DontLogNormal, SeparateErrors bool
	NeedLocal                     bool // the line shows the address the client connected to
	// NeedSource: the line shows the balancer's address on the server
	// connection (%bi, %bp), which costs a getsockname per connection;
	// without them the relay does not pay it.
	NeedSource bool
}

// NewConnLog compiles a frontend's connection log; nil (no log) when it
// has no targets.
func NewConnLog(c *lbconfig.ConnLog, to *Dests) (*ConnLog, error) {
	if to == nil || len(*to) == 0 {
		return nil, nil
	}
	if c == nil {
		return &ConnLog{To: to, Connect: true, NeedLocal: true}, nil
	}
	items, err := lbconfig.ParseLogFormat(c.Format)
	if err != nil {
		return nil, err
	}
	cl := &ConnLog{To: to, items: items, DontLogNull: c.DontLogNull, DontLogNormal: c.DontLogNormal, SeparateErrors: c.SeparateErrors}
	for _, it := range items {
		switch it.Var {
		case "ci", "fi", "fp":
			// %ci too: an IPv4 client of an IPv6 listener is
			// written IPv4-mapped (client), which the listener's
			// address tells.
			cl.NeedLocal = true
		case "bi", "bp":
			cl.NeedSource = true
		}
	}
	return cl, nil
}

// hostname is the host's name, for %H.
var hostname = sync.OnceValue(func() string {
	h, err := os.Hostname()
	if err != nil {
		return "-"
	}
	return h
})

// ms is d in whole milliseconds.
func ms(d time.Duration) int64 { return d.Milliseconds() }

// Fields are what a connection's line may show, as the core knows them
// when the connection has ended.
type Fields struct {
	// Client is the client's address as haproxy writes it (an IPv4
	// client of an IPv6 listener IPv4-mapped); Local the address it
	// connected to; Source the balancer's end of the server connection
	// (invalid when not known).
	Client, Local, Source netip.AddrPort
	// UnixClient is the listener id when the client came over a UNIX
	// socket: haproxy writes "unix" for its address and the listener's
	// address, and the id for both ports. UnixServer: the server is a
	// UNIX socket, written "unix" with port 0, and so is the balancer's
	// end of it (%bi, %bp).
	UnixClient int
	UnixServer bool
	Frontend   string
	// TLS: the client connected to an ssl bind (%ft adds "~").
	TLS bool
	// Backend is "-" when the connection had none.
	Backend string
	// Server is the server picked, HasServer false when none was.
	Server     string
	ServerAddr netip.AddrPort
	HasServer  bool
	// AcceptAt: accepted; StartAt: out of the queue (zero while queued);
	// ConnAt: connected to its server (zero if never).
	AcceptAt, StartAt, ConnAt time.Time
	// Up and Down are the bytes from the client and to it.
	Up, Down uint64
	// Term is the termination state (haproxy's %ts).
	Term [2]byte
	// Attempts is the number of connect attempts.
	Attempts int
	// Counts are read only when the format shows them.
	Counts Counts
}

// Counts are the connection counts a line may show (%ac, %fc, %bc, %sc),
// read when it is written.
type Counts interface {
	Global() int64
	Frontend() int64
	Backend() int64
	Server() int64
}

// AppendLine writes the connection's line in cl's format, at end.
func (cl *ConnLog) AppendLine(b []byte, cn *Fields, end time.Time) []byte {
	addr := func(b []byte, a netip.Addr) []byte {
		if !a.IsValid() {
			return append(b, '-')
		}
		return a.AppendTo(b)
	}
	for _, it := range cl.items {
		if it.Var == "" {
			b = append(b, it.Lit...)
			continue
		}
		q := it.Quote && quotedVar(it.Var)
		if q {
			b = append(b, '"')
		}
		start := len(b)
		unixServer := cn.UnixServer && cn.HasServer
		switch it.Var {
		case "ci", "fi":
			switch {
			case cn.UnixClient > 0:
				b = append(b, "unix"...)
			case it.Var == "ci":
				b = addr(b, cn.Client.Addr())
			default:
				b = addr(b, cn.Local.Addr())
			}
		case "cp", "fp":
			switch {
			case cn.UnixClient > 0:
				b = strconv.AppendInt(b, int64(cn.UnixClient), 10)
			case it.Var == "cp":
				b = strconv.AppendUint(b, uint64(cn.Client.Port()), 10)
			default:
				b = strconv.AppendUint(b, uint64(cn.Local.Port()), 10)
			}
		case "si", "bi":
			if unixServer {
				b = append(b, "unix"...)
				break
			}
			if it.Var == "bi" {
				if cn.Source.IsValid() {
					b = addr(b, cn.Source.Addr())
				} else {
					b = append(b, '-')
				}
				break
			}
			if !cn.HasServer {
				b = append(b, '-')
			} else {
				b = addr(b, cn.ServerAddr.Addr())
			}
		case "sp":
			switch {
			case !cn.HasServer:
				b = append(b, '-')
			case unixServer:
				b = append(b, '0')
			default:
				b = strconv.AppendUint(b, uint64(cn.ServerAddr.Port()), 10)
			}
		case "bp":
			if unixServer {
				b = append(b, '0')
			} else if cn.Source.IsValid() {
				b = strconv.AppendUint(b, uint64(cn.Source.Port()), 10)
			} else {
				b = append(b, '-')
			}
		case "f", "ft":
			b = append(b, cn.Frontend...)
			if it.Var == "ft" && cn.TLS {
				b = append(b, '~')
			}
		case "b":
			b = append(b, cn.Backend...)
		case "s":
			if !cn.HasServer {
				b = append(b, "<NOSRV>"...)
			} else {
				b = append(b, cn.Server...)
			}
		case "t":
			b = cn.AcceptAt.AppendFormat(b, "02/Jan/2006:15:04:05.000")
		case "T":
			b = cn.AcceptAt.UTC().AppendFormat(b, "02/Jan/2006:15:04:05 -0700")
		case "Tl":
			b = cn.AcceptAt.AppendFormat(b, "02/Jan/2006:15:04:05 -0700")
		case "Ts":
			b = strconv.AppendInt(b, cn.AcceptAt.Unix(), 10)
		case "ms":
			b = appendMillis(b, cn.AcceptAt)
		case "Th":
			b = append(b, '0')
		case "Tw":
			tw := int64(0)
			if cn.Term == [2]byte{'C', 'Q'} {
				// The client left the queue: haproxy 2.6 logs the
				// wait until then (measured,
				// TestAbortOnCloseMatchesHaproxy).
				tw = ms(end.Sub(cn.AcceptAt))
			} else if !cn.StartAt.IsZero() && !cn.HasServer {
				// Left the queue and found no server to wait for:
				// haproxy 2.6's "-1/-1/0 0 SC" (measured).
				tw = -1
			} else if !cn.StartAt.IsZero() {
				tw = ms(cn.StartAt.Sub(cn.AcceptAt))
			} else {
				tw = ms(end.Sub(cn.AcceptAt)) // still queued
			}
			b = strconv.AppendInt(b, tw, 10)
		case "Tc":
			tc := int64(-1)
			if !cn.ConnAt.IsZero() {
				tc = ms(cn.ConnAt.Sub(cn.StartAt))
			}
			b = strconv.AppendInt(b, tc, 10)
		case "Tt":
			b = strconv.AppendInt(b, ms(end.Sub(cn.AcceptAt)), 10)
		case "B":
			b = strconv.AppendUint(b, cn.Down, 10)
		case "U":
			b = strconv.AppendUint(b, cn.Up, 10)
		case "ts":
			b = append(b, cn.Term[0], cn.Term[1])
		case "ac":
			b = strconv.AppendInt(b, cn.Counts.Global(), 10)
		case "fc":
			b = strconv.AppendInt(b, cn.Counts.Frontend(), 10)
		case "bc":
			b = strconv.AppendInt(b, cn.Counts.Backend(), 10)
		case "sc":
			b = strconv.AppendInt(b, cn.Counts.Server(), 10)
		case "rc":
			b = strconv.AppendInt(b, int64(max(cn.Attempts-1, 0)), 10)
		case "sq", "bq", "ST":
			b = append(b, '0')
		case "pid":
			b = strconv.AppendInt(b, int64(os.Getpid()), 10)
		case "H":
			b = append(b, hostname()...)
		}
		if it.Quote && string(b[start:]) == "-" && emptyQuotedVar(it.Var) {
			// haproxy writes an absent address or port as "" under
			// +Q (measured).
			b = b[:start]
			if !q {
				b = append(b, '"')
			}
			q = true
		}
		if q {
			b = append(b, '"')
		}
	}
	return b
}

// quotedVar reports whether +Q quotes v: haproxy 2.6.12 quotes names and
// addresses, not numbers, ports, dates nor the termination state
// (measured: %{+Q}ci "127.0.0.1", %{+Q}cp 46602, %{+Q}s "s1", %{+Q}B 1251,
// %{+Q}t 23/Nov/2026:21:39:18.908, %{+Q}ts --, %{+Q}H "vm").
func quotedVar(v string) bool {
	switch v {
	case "ci", "fi", "si", "bi", "f", "ft", "b", "s", "H":
		return true
	}
	return false
}

// emptyQuotedVar reports whether v, absent ("-"), is written "" under +Q
// (measured, haproxy 2.6.12, no server tried: %{+Q}si %{+Q}sp %{+Q}bi
// %{+Q}bp give "" "" "" "").
func emptyQuotedVar(v string) bool {
	switch v {
	case "si", "sp", "bi", "bp":
		return true
	}
	return false
}

func appendMillis(b []byte, t time.Time) []byte {
	m := t.Nanosecond() / 1e6
	return append(b, byte('0'+m/100), byte('0'+m/10%10), byte('0'+m%10))
}

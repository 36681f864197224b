package lb

import (
	"strconv"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/lb/logging"
	"github.com/vipstack/vipstack/internal/lb/web"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// webLogger writes the request lines of a monitor or stats section with a
// log format (web.RequestLog) to to; nil when the section has no format
// (then its requests send "Connect from").
func (l *LB) webLogger(site *web.Site, to *logging.Dests) func(web.RequestLog) {
	var format *lbconfig.ConnLog
	var name string
	switch {
	case site.Monitor != nil:
		format, name = site.Monitor.Log, site.Monitor.Name
	case site.Stats != nil:
		format, name = site.Stats.Log, site.Stats.Name
	}
	if format == nil {
		return nil
	}
	count := site.Count
	counts := webCounts{l: l, count: count}
	if format.Format == lbconfig.HTTPLogFormat {
		return func(rl web.RequestLog) {
			if level, ok := webLogLevel(format, rl); ok {
				l.sendLog(to, level, appendHTTPLogLine(nil, name, rl, counts))
			}
		}
	}
	if format.Format == lbconfig.HTTPLogCLFFormat {
		hl, err := logging.NewHTTPLog(format.Format, to)
		if err != nil || hl == nil {
			return nil
		}
		return func(rl web.RequestLog) {
			if level, ok := webLogLevel(format, rl); ok {
				var buf [512]byte
				f := webHTTPFields(name, rl, counts)
				l.sendLog(to, level, hl.AppendLine(buf[:0], &f))
			}
		}
	}
	cl, err := logging.NewConnLog(format, to)
	if err != nil || cl == nil { // Validate has checked the format
		return nil
	}
	return func(rl web.RequestLog) {
		level, ok := webLogLevel(format, rl)
		if !ok {
			return
		}
		// The stream as a TCP line: the page as a server that answered
		// at once (0/0/Tt), anything else without a server (-1/-1/Tt),
		// as haproxy writes them (measured, option tcplog).
		f := logging.Fields{Client: rl.Client, Local: rl.Local, Frontend: name, Backend: name, AcceptAt: rl.Start,
			StartAt: rl.Start, Down: rl.Bytes, Term: rl.Term, Attempts: 1, Counts: counts}
		if rl.Server == "<STATS>" {
			f.Server, f.HasServer, f.ConnAt = rl.Server, true, rl.Start
		}
		var buf [512]byte
		l.sendLog(to, level, cl.AppendLine(buf[:0], &f, rl.Start.Add(time.Duration(rl.Ta)*time.Millisecond)))
	}
}

// webLogLevel is the level of a request's line, false when the format's
// options leave it out: dontlognull a stream whose client sent nothing,
// dontlog-normal a request answered by the section itself.
func webLogLevel(format *lbconfig.ConnLog, rl web.RequestLog) (int, bool) {
	if rl.Null && format.DontLogNull {
		return 0, false
	}
	normal := rl.Term == [2]byte{'L', 'R'}
	if normal && format.DontLogNormal {
		return 0, false
	}
	if !normal && format.SeparateErrors {
		return lbconfig.LevelErr, true
	}
	return lbconfig.LevelInfo, true
}

// webCounts are a monitor or stats section's counts for %ac/%fc/%bc/%sc.
type webCounts struct {
	l     *LB
	count *web.Count
}

func (c webCounts) Global() int64 {
	n := c.l.gcount.Load()
	if c.count != nil {
		n += c.count.Current()
	}
	return n
}

func (c webCounts) Frontend() int64 {
	if c.count == nil {
		return 1
	}
	return c.count.Current()
}

func (c webCounts) Backend() int64 { return 0 }
func (c webCounts) Server() int64  { return 0 }

// appendHTTPLogLine writes rl in haproxy's `option httplog` format:
//
//	%ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %CC %CS %tsc %ac/%fc/%bc/%sc/%rc %sq/%bq %hr %hs %{+Q}r
//
// with no captured cookies or headers (%CC %CS "-", %hr %hs empty and
// left out with their space, as haproxy does).
func appendHTTPLogLine(b []byte, name string, rl web.RequestLog, c webCounts) []byte {
	b = rl.Client.Addr().AppendTo(b)
	b = append(b, ':')
	b = strconv.AppendUint(b, uint64(rl.Client.Port()), 10)
	b = append(b, " ["...)
	b = rl.Start.AppendFormat(b, "02/Jan/2006:15:04:05.000")
	b = append(b, "] "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, name...)
	b = append(b, '/')
	b = append(b, rl.Server...)
	b = append(b, ' ')
	for i, t := range []int64{rl.TR, rl.Tw, rl.Tc, rl.Tr, rl.Ta} {
		if i > 0 {
			b = append(b, '/')
		}
		b = strconv.AppendInt(b, t, 10)
	}
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(rl.Status), 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, rl.Bytes, 10)
	b = append(b, " - - "...)
	b = append(b, rl.Term[0], rl.Term[1], '-', '-', ' ')
	for i, n := range []int64{c.Global(), c.Frontend(), 0, 0, 0} {
		if i > 0 {
			b = append(b, '/')
		}
		b = strconv.AppendInt(b, n, 10)
	}
	b = append(b, " 0/0 \""...)
	if rl.Request == "" {
		b = append(b, "<BADREQ>"...)
	} else {
		b = append(b, rl.Request...)
	}
	return append(b, '"')
}

// webHTTPFields is a monitor's or stats section's request as an HTTP
// log line's fields, for a format other than option httplog's (option
// httplog clf).
func webHTTPFields(name string, rl web.RequestLog, c webCounts) logging.HTTPFields {
	ms := func(v int64) time.Duration {
		if v < 0 {
			return -1
		}
		return time.Duration(v) * time.Millisecond
	}
	f := logging.HTTPFields{Client: rl.Client, Local: rl.Local, Frontend: name, Backend: name, AcceptAt: rl.Start,
		TR: ms(rl.TR), Tw: ms(rl.Tw), Tc: ms(rl.Tc), Tr: ms(rl.Tr), Ta: ms(rl.Ta), Status: rl.Status, Down: rl.Bytes,
		Term: rl.Term, BadRequest: rl.Request == "", Counts: c}
	if rl.Server != "<NOSRV>" {
		f.Server = rl.Server
	}
	parts := strings.SplitN(rl.Request, " ", 3)
	if len(parts) == 3 {
		f.Method, f.URI, f.Version = parts[0], parts[1], parts[2]
	}
	return f
}

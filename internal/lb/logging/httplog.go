package logging

import (
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// HTTPLog is a mode http frontend's request log: a line per request in
// its format (haproxy's option httplog or a log-format with HTTP
// variables).
type HTTPLog struct {
	To    *Dests
	items []lbconfig.LogItem
}

// NewHTTPLog compiles an HTTP frontend's format; nil when it has no
// targets or no format.
func NewHTTPLog(format string, to *Dests) (*HTTPLog, error) {
	if to == nil || len(*to) == 0 || format == "" {
		return nil, nil
	}
	items, err := lbconfig.ParseHTTPLogFormat(format)
	if err != nil {
		return nil, err
	}
	return &HTTPLog{To: to, items: items}, nil
}

// HTTPFields are what a request's line may show.
type HTTPFields struct {
	Client, Local netip.AddrPort
	// UnixClient and UnixServer are Fields'.
	UnixClient int
	UnixServer bool
	Frontend   string
	TLS        bool // over an ssl bind: %ft adds "~"
	Backend    string
	Server     string // "" when no server was picked
	ServerAddr netip.AddrPort
	AcceptAt   time.Time
	// TR, Tw, Tc, Tr: the request's head, the queue, the connect and the
	// server's answer; negative when not reached. Ta the whole request.
	TR, Tw, Tc, Tr, Ta   time.Duration
	Status               int
	Down, Up             uint64
	Method, URI, Version string
	Term                 [2]byte
	Retries              int
	// BadRequest: no request was read; %r is "<BADREQ>".
	BadRequest bool
	Counts     Counts
	// ReqCaps and ResCaps are the captured request and answer headers
	// (nil without capture lines of that side; an entry nil when the
	// header was absent). CookieReq and CookieRes are the captured
	// cookies, "" for none.
	ReqCaps, ResCaps     []*string
	CookieReq, CookieRes string
}

func msOrMinus(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}

// AppendLine writes the request's line.
func (hl *HTTPLog) AppendLine(b []byte, f *HTTPFields) []byte {
	// The variables a TCP line has too are written by ConnLog, from
	// the Fields they map to.
	cn := Fields{Client: f.Client, Local: f.Local, UnixClient: f.UnixClient, UnixServer: f.UnixServer, Frontend: f.Frontend, TLS: f.TLS, Backend: f.Backend, Server: f.Server,
		ServerAddr: f.ServerAddr, HasServer: f.Server != "", AcceptAt: f.AcceptAt, StartAt: f.AcceptAt.Add(max(f.TR, 0)),
		Up: f.Up, Down: f.Down, Term: f.Term, Attempts: f.Retries + 1, Counts: f.Counts}
	if f.Tc >= 0 {
		cn.ConnAt = cn.StartAt.Add(f.Tc)
	}
	end := f.AcceptAt.Add(f.Ta)
	skipSpace := false
	for _, it := range hl.items {
		if it.Var == "" && skipSpace && len(it.Lit) > 0 && it.Lit[0] == ' ' {
			// haproxy leaves out an empty capture with the space after
			// it ("%hr %hs %{+Q}r" without captures: one space).
			b = append(b, it.Lit[1:]...)
			skipSpace = false
			continue
		}
		skipSpace = false
		q := it.Quote
		switch it.Var {
		case "tr", "trg", "trl", "TR", "Tr", "Ta", "Td", "Tu", "Tq", "Ti", "Tw", "Tc", "ST", "r", "HM", "HU", "HP", "HPO", "HQ", "HV", "CC", "CS", "tsc", "hr", "hs", "hrl", "hsl":
		default:
			one := ConnLog{items: []lbconfig.LogItem{it}}
			b = one.AppendLine(b, &cn, end)
			continue
		}
		quoted := q && (it.Var == "r" || it.Var == "HM" || it.Var == "HU" || it.Var == "HP" || it.Var == "HPO" || it.Var == "HQ" || it.Var == "HV" || it.Var == "CC" || it.Var == "CS")
		if quoted {
			b = append(b, '"')
		}
		if f.BadRequest && len(it.Var) >= 2 && it.Var[0] == 'H' && it.Var != "H" {
			// No request: haproxy shows each of its parts as the
			// request, "<BADREQ>" (measured).
			b = append(b, "<BADREQ>"...)
			if quoted {
				b = append(b, '"')
			}
			continue
		}
		switch it.Var {
		case "tr":
			b = f.AcceptAt.Add(max(f.TR, 0)).AppendFormat(b, "02/Jan/2006:15:04:05.000")
		case "trg":
			b = f.AcceptAt.Add(max(f.TR, 0)).UTC().AppendFormat(b, "02/Jan/2006:15:04:05 -0700")
		case "trl":
			b = f.AcceptAt.Add(max(f.TR, 0)).AppendFormat(b, "02/Jan/2006:15:04:05 -0700")
		case "TR", "Tq":
			b = strconv.AppendInt(b, msOrMinus(f.TR), 10)
		case "Ti":
			b = append(b, '0')
		case "Tu":
			b = strconv.AppendInt(b, msOrMinus(f.Ta), 10)
		case "Td":
			td := int64(-1)
			if f.Tr >= 0 {
				td = max(msOrMinus(f.Ta)-msOrMinus(max(f.TR, 0))-msOrMinus(max(f.Tw, 0))-msOrMinus(max(f.Tc, 0))-msOrMinus(f.Tr), 0)
			}
			b = strconv.AppendInt(b, td, 10)
		case "Tw":
			b = strconv.AppendInt(b, msOrMinus(f.Tw), 10)
		case "Tc":
			b = strconv.AppendInt(b, msOrMinus(f.Tc), 10)
		case "Tr":
			b = strconv.AppendInt(b, msOrMinus(f.Tr), 10)
		case "Ta":
			b = strconv.AppendInt(b, msOrMinus(f.Ta), 10)
		case "ST":
			b = strconv.AppendInt(b, int64(f.Status), 10)
		case "r":
			if f.BadRequest {
				b = append(b, "<BADREQ>"...)
				break
			}
			b = append(b, f.Method...)
			b = append(b, ' ')
			b = append(b, f.URI...)
			b = append(b, ' ')
			b = append(b, f.Version...)
		case "HM":
			b = append(b, f.Method...)
		case "HU":
			b = append(b, f.URI...)
		case "HP", "HQ":
			path, query := f.URI, ""
			for i := 0; i < len(f.URI); i++ {
				if f.URI[i] == '?' {
					path, query = f.URI[:i], f.URI[i:]
					break
				}
			}
			if it.Var == "HP" {
				b = append(b, path...)
			} else {
				b = append(b, query...)
			}
		case "HPO":
			path, _, _ := strings.Cut(f.URI, "?")
			if i := strings.Index(path, "://"); i >= 0 && !strings.Contains(path[:i], "/") {
				// absolute form: from the first '/' after the authority
				rest := path[i+3:]
				path = "/"
				if j := strings.IndexByte(rest, '/'); j >= 0 {
					path = rest[j:]
				}
			}
			b = append(b, path...)
		case "HV":
			b = append(b, f.Version...)
		case "CC", "CS":
			v := f.CookieReq
			if it.Var == "CS" {
				v = f.CookieRes
			}
			if v == "" && !quoted {
				v = "-"
			}
			b = append(b, v...)
		case "tsc":
			b = append(b, f.Term[0], f.Term[1], '-', '-')
		case "hr", "hs", "hrl", "hsl":
			caps := f.ReqCaps
			if it.Var[1] == 's' {
				caps = f.ResCaps
			}
			if caps == nil {
				// haproxy leaves out a capture the frontend does not
				// have, with the space after it.
				skipSpace = true
				break
			}
			b = appendCaptures(b, caps, len(it.Var) == 3, q)
		}
		if quoted {
			b = append(b, '"')
		}
	}
	return b
}

// appendCaptures writes captured headers as haproxy does: %hr "{a|b}"
// (quoted whole under +Q), %hrl "a b" with "-" for an absent one (each
// quoted under +Q, absent then ""); bytes of hdrEncoded as #XX.
func appendCaptures(b []byte, caps []*string, list, quote bool) []byte {
	if !list {
		if quote {
			b = append(b, '"')
		}
		b = append(b, '{')
		for i, c := range caps {
			if i > 0 {
				b = append(b, '|')
			}
			if c != nil {
				b = appendHdrEncoded(b, *c)
			}
		}
		b = append(b, '}')
		if quote {
			b = append(b, '"')
		}
		return b
	}
	for i, c := range caps {
		if i > 0 {
			b = append(b, ' ')
		}
		if quote {
			b = append(b, '"')
		}
		switch {
		case c != nil:
			b = appendHdrEncoded(b, *c)
		case !quote:
			b = append(b, '-')
		}
		if quote {
			b = append(b, '"')
		}
	}
	return b
}

// appendHdrEncoded writes s with haproxy's escaping of captured headers:
// control bytes, bytes from 0x7f and '"', '#', '{', '|', '}' become
// '#' and two upper-case hex digits.
func appendHdrEncoded(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || strings.IndexByte("\"#{|}", c) >= 0 {
			b = append(b, '#', hex[c>>4], hex[c&15])
			continue
		}
		b = append(b, c)
	}
	return b
}

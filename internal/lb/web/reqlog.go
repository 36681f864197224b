package web

import (
	"net/netip"
	"strconv"
	"time"
)

// RequestLog is one stream of a monitor or stats listener, as haproxy
// 2.6 logs it when the section has a log format (measured, haproxy
// 2.6.12, `option httplog` and `option tcplog`):
//
//	stats stats/<STATS> 0/0/0/0/0 200 13355 - - LR-- ... "GET /st HTTP/1.1"      the page (LR)
//	stats stats/<STATS> 0/0/0/-1/0 400 469 - - LR-- ... "GET /st HTTP/1.1"      asked for the password (401, logged 400)
//	stats stats/<NOSRV> 0/-1/-1/-1/0 503 217 - - SC-- ... "GET /other HTTP/1.1" another URI: the serverless backend
//	stats stats/<NOSRV> -1/-1/-1/-1/0 400 0 - - CR-- ... "<BADREQ>"            connected and closed (not with dontlognull)
//	stats stats/<NOSRV> -1/-1/-1/-1/0 400 0 - - PR-- ... "<BADREQ>"            garbage, answered 400
//	stats stats/<NOSRV> -1/-1/-1/-1/1003 408 0 - - cR-- ... "<BADREQ>"         timeout http-request
//
// A monitor's answer at its URI is never logged.
type RequestLog struct {
	Client, Local netip.AddrPort
	// Start is when the stream started: the accept, or a keep-alive
	// request's first byte.
	Start time.Time
	// TR is the time the head took, Ta the whole stream's, in ms; TR -1
	// for a request that never parsed. Tw, Tc and Tr are haproxy's
	// queue, connect and response times: 0 for the stats page, -1 for
	// what did not happen.
	TR, Tw, Tc, Tr, Ta int64
	Status             int
	Bytes              uint64  // sent to the client, as haproxy counts them
	Term               [2]byte // LR, SC, CR, PR, cR
	Server             string  // "<STATS>" or "<NOSRV>"
	Request            string  // "GET /st HTTP/1.1"; "" for "<BADREQ>"
	Null               bool    // the client sent nothing (option dontlognull leaves these out)
}

// ms is d in whole milliseconds.
func ms(d time.Duration) int64 { return int64(d / time.Millisecond) }

// logRefused logs a stream refused before a request parsed.
func (h *Listener) logRefused(c *webConn, start time.Time, status int, term string, null bool) {
	s := h.site.Load()
	if s.LogRequest == nil {
		return
	}
	s.LogRequest(RequestLog{Client: addrPort(c.RemoteAddr()), Local: addrPort(c.LocalAddr()), Start: start,
		TR: -1, Tw: -1, Tc: -1, Tr: -1, Ta: ms(time.Since(start)), Status: status, Term: [2]byte{term[0], term[1]},
		Server: "<NOSRV>", Null: null})
}

// logAnswered logs an answered request.
func (h *Listener) logAnswered(c *webConn, start, headAt time.Time, req *request, resp *response) {
	s := h.site.Load()
	if s.LogRequest == nil {
		return
	}
	rl := RequestLog{Client: addrPort(c.RemoteAddr()), Local: addrPort(c.LocalAddr()), Start: start,
		TR: ms(headAt.Sub(start)), Ta: ms(time.Since(start)), Status: resp.code,
		Bytes: resp.htxSize(req.method == "HEAD"), Request: req.method + " " + req.uri + " HTTP/" + itoa(req.major) + "." + itoa(req.minor)}
	switch {
	case resp.backend:
		rl.Tw, rl.Tc, rl.Tr, rl.Term, rl.Server = -1, -1, -1, [2]byte{'S', 'C'}, "<NOSRV>"
	case s.Monitor != nil || s.monitorHit(req):
		return // a monitor hit: haproxy logs none
	case resp.code == 401:
		// haproxy logs the password prompt with status 400 and no
		// response time (measured).
		rl.Status, rl.Tr, rl.Term, rl.Server = 400, -1, [2]byte{'L', 'R'}, "<STATS>"
		// Its size too is haproxy's own: the answer's plus 206 bytes
		// (measured: 469 with the default realm, 452 with "X", whose
		// header is 17 bytes shorter).
		rl.Bytes += unauthorizedExtra
	default:
		rl.Term, rl.Server = [2]byte{'L', 'R'}, "<STATS>"
	}
	s.LogRequest(rl)
}

func addrPort(a interface{ String() string }) netip.AddrPort {
	ap, _ := netip.ParseAddrPort(a.String())
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
func itoa(n int) string { return strconv.Itoa(n) }

// Current is the section's connections open now (haproxy's %fc).
func (c *Count) Current() int64 { return c.cur.Load() }

// unauthorizedExtra is what haproxy 2.6.12's log adds to the size of its
// 401 answer (see logAnswered).
const unauthorizedExtra = 206

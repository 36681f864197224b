package healthcheck

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Status values are haproxy's check_status codes, as its stats page and
// CSV show them.
const (
	L4OK    = "L4OK"    // TCP connect succeeded (TCP checks)
	L4TOUT  = "L4TOUT"  // TCP connect timed out
	L4CON   = "L4CON"   // TCP connect failed (refused, unreachable)
	L6OK    = "L6OK"    // TLS handshake succeeded (check-ssl without httpchk)
	L6TOUT  = "L6TOUT"  // TLS handshake timed out
	L6RSP   = "L6RSP"   // TLS handshake failed
	L7OK    = "L7OK"    // HTTP status 2xx or 3xx
	L7TOUT  = "L7TOUT"  // no HTTP response in time
	L7RSP   = "L7RSP"   // not an HTTP response
	L7STS   = "L7STS"   // HTTP status other than 2xx/3xx
	SOCKERR = "SOCKERR" // local socket error
)

// Statuses returns every Status value, for metrics.
func Statuses() []string {
	return []string{L4OK, L4TOUT, L4CON, L6OK, L6TOUT, L6RSP, L7OK, L7TOUT, L7RSP, L7STS, SOCKERR, PROCERR, PROCTOUT, PROCOK}
}

// Description returns haproxy's text for a status ("Layer7 wrong status").
func Description(status string) string {
	switch status {
	case L4OK:
		return "Layer4 check passed"
	case L4TOUT:
		return "Layer4 timeout"
	case L4CON:
		return "Layer4 connection problem"
	case L6OK:
		return "Layer6 check passed"
	case L6TOUT:
		return "Layer6 timeout"
	case L6RSP:
		return "Layer6 invalid response"
	case L7OK:
		return "Layer7 check passed"
	case L7TOUT:
		return "Layer7 timeout"
	case L7RSP:
		return "Layer7 invalid response"
	case L7STS:
		return "Layer7 wrong status"
	case SOCKERR:
		return "Socket error"
	case PROCERR:
		return "External check error"
	case PROCTOUT:
		return "External check timeout"
	case PROCOK:
		return "External check passed"
	}
	return status
}

// HaproxyInfo is the info haproxy 2.6.12 shows for a failed result, in
// its log lines (`info: "..."`) and its stats' last_chk, where Info keeps
// the reason as Go gave it (for vipstack's own log and the node's JSON
// status; the stats and `vipstack status` show this text). A check-ssl
// handshake that fails, whatever the TLS library's reason, is "SSL
// handshake failure", and one that times out has none (measured: a server
// that closes after the ClientHello, one that answers in plain HTTP, one
// whose certificate the CA file does not verify; one that never answers
// the ClientHello gives L6TOUT and an empty last_chk). An invalid HTTP
// answer (L7RSP) has none either (measured: no answer, "garbage", a
// status line cut short, a head past its buffer). Other results keep
// their Info, cut to its first 127 bytes as haproxy keeps them (its check
// description's 128-byte buffer; measured: a reason of 16000 bytes gives
// a last_chk of 127, cut within a UTF-8 sequence if it falls there).
func HaproxyInfo(r Result) string {
	switch r.Status {
	case L6RSP:
		return "SSL handshake failure"
	case L6TOUT, L7RSP, PROCERR, PROCTOUT, PROCOK:
		return "" // haproxy keeps no info for these
	}
	if len(r.Info) > maxInfo {
		return r.Info[:maxInfo]
	}
	return r.Info
}

// maxInfo is the longest info haproxy 2.6.12 keeps (HCHK_DESC_LEN - 1).
const maxInfo = 127

// Result is one probe's outcome.
type Result struct {
	OK     bool
	Status string // one of the Status constants
	Code   int    // HTTP status code, 0 if none was read
	Info   string // why it failed, or the HTTP reason phrase
	// Duration is how long the probe took (on the checker's clock).
	Duration time.Duration
}

// TCP is a connect check to Addr, followed by a TLS handshake when TLS is
// set (haproxy `check check-ssl` without `option httpchk`).
type TCP struct {
	Addr netip.AddrPort
	TLS  *tls.Config
	// SendProxy is the server's send-proxy version (proxyhdr.go); 0: none.
	SendProxy int
}

// Probe connects and closes.
func (p TCP) Probe(ctx context.Context) Result {
	conn, r, ok := connect(ctx, p.Addr, p.TLS, p.SendProxy)
	if !ok {
		return r
	}
	conn.Close()
	if p.TLS != nil {
		return Result{OK: true, Status: L6OK}
	}
	return Result{OK: true, Status: L4OK}
}

// HTTP is haproxy's `option httpchk METHOD URI VERSION`: it sends
// "METHOD URI VERSION" and reads the status line; 2xx and 3xx pass. With
// TLS set the request goes over TLS (`check-ssl`).
type HTTP struct {
	Addr    netip.AddrPort
	Method  string // "" means OPTIONS, haproxy's default
	URI     string // "" means "/"
	Version string // "" means HTTP/1.0
	TLS     *tls.Config
	// ExpectStatus are the status codes that pass, as inclusive ranges
	// (haproxy's `http-check expect status 200,300-399`); empty means 2xx
	// and 3xx.
	ExpectStatus [][2]int
	// ExpectBody, when set, decides instead of the status: `http-check
	// expect [!] string|rstring` (BodyMatch).
	ExpectBody *BodyMatch
	// Headers and Body are sent after the request line (`http-check send
	// hdr NAME VALUE body STRING`): header names in lower case, as
	// haproxy 2.6 writes them, and a body with its content-length.
	Headers []Header
	Body    string
	// SendProxy is the server's send-proxy version (proxyhdr.go); 0: none.
	SendProxy int
	// BufSize bounds the answer's head read (haproxy's tune.bufsize); 0:
	// maxHead.
	BufSize int
}

// Header is one request header of an HTTP check.
type Header struct{ Name, Value string }

// Request returns the bytes the probe sends. haproxy sends the request
// line, its headers and an empty line; vipstack adds "Connection: close",
// and a Host header for HTTP/1.1, which requires one (RFC 9112 section
// 3.2), unless Headers has one.
func (p HTTP) Request() string {
	method, uri, version := p.Method, p.URI, p.Version
	if method == "" {
		method = "OPTIONS"
	}
	if uri == "" {
		uri = "/"
	}
	if version == "" {
		version = "HTTP/1.0"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s\r\n", method, uri, version)
	hasHost := false
	for _, h := range p.Headers {
		fmt.Fprintf(&b, "%s: %s\r\n", strings.ToLower(h.Name), h.Value)
		hasHost = hasHost || strings.EqualFold(h.Name, "host")
	}
	if version == "HTTP/1.1" && !hasHost {
		fmt.Fprintf(&b, "Host: %s\r\n", p.Addr)
	}
	if p.Body != "" {
		fmt.Fprintf(&b, "content-length: %d\r\n", len(p.Body))
	}
	b.WriteString("Connection: close\r\n\r\n")
	b.WriteString(p.Body)
	return b.String()
}

// maxHead bounds the answer's head a probe reads: one that does not end
// within it is an invalid response (L7RSP), as haproxy 2.6.12 answers
// one that does not fit its 16 KiB buffer (measured: a reason phrase of
// 16250 bytes gives L7STS, one of 16300 bytes L7RSP).
// That is haproxy's default tune.bufsize; HTTP.BufSize sets another.
const maxHead = 16 << 10

// Probe sends the request and checks the status code.
func (p HTTP) Probe(ctx context.Context) Result {
	conn, r, ok := connect(ctx, p.Addr, p.TLS, p.SendProxy)
	if !ok {
		return r
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := conn.Write([]byte(p.Request())); err != nil {
		if ctx.Err() != nil {
			return Result{Status: L7TOUT, Info: "timeout sending the request"}
		}
		return ioFailed(err, L7RSP)
	}
	// At most maxHead bytes are read: net/http reads a status line or a
	// header whole, however long.
	limit := int64(maxHead)
	if p.BufSize > 0 {
		limit = int64(p.BufSize)
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(io.LimitReader(conn, limit), 1024), nil)
	if err != nil {
		if ctx.Err() != nil {
			return Result{Status: L7TOUT, Info: "no response in time"}
		}
		return ioFailed(err, L7RSP)
	}
	if p.ExpectBody != nil {
		return p.ExpectBody.judge(ctx, resp)
	}
	resp.Body.Close()
	reason := strings.TrimSpace(strings.TrimPrefix(resp.Status, fmt.Sprint(resp.StatusCode)))
	pass := resp.StatusCode >= 200 && resp.StatusCode < 400
	if len(p.ExpectStatus) > 0 {
		pass = false
		for _, r := range p.ExpectStatus {
			pass = pass || resp.StatusCode >= r[0] && resp.StatusCode <= r[1]
		}
	}
	if pass {
		return Result{OK: true, Status: L7OK, Code: resp.StatusCode, Info: reason}
	}
	return Result{Status: L7STS, Code: resp.StatusCode, Info: reason}
}

// connect dials addr, writes the PROXY protocol header of version proxy
// (0: none; proxyhdr.go) and, with cfg, completes a TLS handshake. On
// failure it returns the result to report.
func connect(ctx context.Context, addr netip.AddrPort, cfg *tls.Config, proxy int) (net.Conn, Result, bool) {
	d := net.Dialer{KeepAlive: -1}
	tc, err := d.DialTCP(ctx, "tcp", netip.AddrPort{}, addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, Result{Status: L4TOUT, Info: "connect timed out"}, false
		}
		var se syscall.Errno
		if errors.As(err, &se) && (se == syscall.EMFILE || se == syscall.ENFILE || se == syscall.ENOBUFS || se == syscall.EADDRNOTAVAIL) {
			return nil, Result{Status: SOCKERR, Info: errText(err)}, false
		}
		return nil, Result{Status: L4CON, Info: errText(err)}, false
	}
	if proxy != 0 {
		if r, ok := sendProxyHeader(ctx, tc, addr, proxy); !ok {
			tc.Close()
			return nil, r, false
		}
	}
	if cfg == nil {
		return tc, Result{}, true
	}
	tl := tls.Client(tc, cfg)
	if err := tl.HandshakeContext(ctx); err != nil {
		tc.Close()
		if ctx.Err() != nil {
			return nil, Result{Status: L6TOUT, Info: "TLS handshake timed out"}, false
		}
		return nil, Result{Status: L6RSP, Info: errText(err)}, false
	}
	return tl, Result{}, true
}

// errText is the innermost error text ("connection refused"), as haproxy
// reports the system error rather than the whole operation.
// errText is what a failed check reports as its info: for a system error,
// the C library's text ("Connection refused", "No route to host"), which
// haproxy shows in its logs and in the stats' last_chk; Go spells the same
// texts in lower case.
// ioFailed is the result of a read or write that failed once the
// connection was up: as in haproxy, a socket error (a reset, a broken
// pipe) is SOCKERR with the error's text; anything else (the server
// closed the connection, an answer that does not parse) is the check's
// own failure, status rsp.
func ioFailed(err error, rsp string) Result {
	var se syscall.Errno
	if errors.As(err, &se) {
		return Result{Status: SOCKERR, Info: errText(err)}
	}
	return Result{Status: rsp, Info: errText(err)}
}

func errText(err error) string {
	var se syscall.Errno
	if errors.As(err, &se) {
		t := se.Error()
		if t != "" && t[0] >= 'a' && t[0] <= 'z' {
			t = string(t[0]-'a'+'A') + t[1:]
		}
		return t
	}
	return err.Error()
}

// TLSConfig returns the client configuration for `check-ssl`: certificate
// verification only when verify is set (haproxy `verify required`; `verify
// none` turns it off), SNI off as in haproxy without `check-sni`, and a
// session cache so that each check after the first resumes the session
// instead of a full handshake.
func TLSConfig(verify bool, addr netip.AddrPort) *tls.Config {
	return &tls.Config{
		InsecureSkipVerify: !verify,
		ServerName:         addr.Addr().String(), // verified against the certificate's IP SANs
		ClientSessionCache: tls.NewLRUClientSessionCache(1),
		MinVersion:         tls.VersionTLS12,
	}
}

package healthcheck

import (
	"bytes"
	"context"
	"crypto/tls"
	"net/netip"
	"time"
)

// RedisPing is what haproxy's `option redis-check` sends: PING in Redis's
// protocol (RESP), and redisPong the answer that passes.
const (
	RedisPing = "*1\r\n$4\r\nPING\r\n"
	redisPong = "+PONG\r\n"
)

// Redis is haproxy's `option redis-check`, as haproxy 2.6 carries it out
// (measured): it sends RedisPing and reads until the answer holds
// "+PONG\r\n", which passes (L7OK, "Redis server is ok"). Another answer
// fails when the server closes the connection or the answer fills the
// buffer (L7STS, with the answer's first line as the info, "TCPCHK got an
// empty response at step 2" for none); until then more may come, so an
// open connection without the PONG times out (L7TOUT).
type Redis struct {
	Addr netip.AddrPort
	TLS  *tls.Config // check-ssl
	// SendProxy is the server's send-proxy version (proxyhdr.go); 0: none.
	SendProxy int
	// BufSize bounds the answer read (haproxy's tune.bufsize); 0:
	// maxExpect.
	BufSize int
}

// Probe sends the PING and reads the answer.
func (p Redis) Probe(ctx context.Context) Result {
	conn, r, ok := connect(ctx, p.Addr, p.TLS, p.SendProxy)
	if !ok {
		return r
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := conn.Write([]byte(RedisPing)); err != nil {
		if ctx.Err() != nil {
			return Result{Status: L7TOUT, Info: "timeout at step 1 of the tcp-check"}
		}
		return ioFailed(err, L7RSP)
	}
	limit := maxExpect
	if p.BufSize > 0 {
		limit = p.BufSize
	}
	var got []byte
	buf := make([]byte, 4096)
	for !bytes.Contains(got, []byte(redisPong)) {
		if len(got) >= limit {
			return redisFailed(got)
		}
		n, err := conn.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil && !bytes.Contains(got, []byte(redisPong)) {
			if ctx.Err() != nil {
				return Result{Status: L7TOUT, Info: "timeout at step 2 of the tcp-check"}
			}
			if r := ioFailed(err, L7RSP); r.Status == SOCKERR {
				return r
			}
			return redisFailed(got)
		}
	}
	return Result{OK: true, Status: L7OK, Info: "Redis server is ok"}
}

// redisFailed is the result of an answer without the PONG: its first line
// (haproxy's `res.payload(0,0),cut_crlf`).
func redisFailed(got []byte) Result {
	if len(got) == 0 {
		return Result{Status: L7STS, Info: "TCPCHK got an empty response at step 2"}
	}
	if i := bytes.IndexAny(got, "\r\n"); i >= 0 {
		got = got[:i]
	}
	return Result{Status: L7STS, Info: string(got)}
}

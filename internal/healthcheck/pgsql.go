package healthcheck

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"net/netip"
	"time"
)

// PgSQL is haproxy's `option pgsql-check user NAME`, as haproxy 2.6
// carries it out (measured with haproxy 2.6.12): it sends a startup
// message for protocol 3.0 naming the user and reads the answer.
// An authentication request ('R' with a code of 0, 2..7, 9 or 10: ok,
// a password, ...) passes (L7OK "PostgreSQL server is ok"); an error
// message ('E') fails with its first field (L7RSP, "FATAL"); another
// answer fails (L7STS "PostgreSQL unknown error"), once 9 bytes (5 for
// an error) came or the server closed; none at all is L7RSP "TCPCHK got
// an empty response at step 3".
type PgSQL struct {
	Addr netip.AddrPort
	User string
	TLS  *tls.Config // check-ssl
	// SendProxy is the server's send-proxy version (proxyhdr.go); 0: none.
	SendProxy int
}

// PgSQLStartup is the startup message for user: its length, protocol
// 3.0, then "user", the name and the closing NUL.
func PgSQLStartup(user string) []byte {
	body := append([]byte{0, 3, 0, 0}, "user\x00"+user+"\x00\x00"...)
	return append(binary.BigEndian.AppendUint32(nil, uint32(4+len(body))), body...)
}

// Probe sends the startup message and judges the first answer.
func (p PgSQL) Probe(ctx context.Context) Result {
	conn, r, ok := connect(ctx, p.Addr, p.TLS, p.SendProxy)
	if !ok {
		return r
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := conn.Write(PgSQLStartup(p.User)); err != nil {
		if ctx.Err() != nil {
			return Result{Status: L7TOUT, Info: "timeout at step 2 of the tcp-check"}
		}
		return ioFailed(err, L7RSP)
	}
	var got []byte
	buf := make([]byte, 512)
	for len(got) < 9 && !(len(got) >= 5 && got[0] == 'E') {
		n, err := conn.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			if ctx.Err() != nil {
				return Result{Status: L7TOUT, Info: "timeout at step 3 of the tcp-check"}
			}
			if r := ioFailed(err, L7RSP); r.Status == SOCKERR {
				return r
			}
			break
		}
	}
	return pgsqlJudge(got)
}

// pgsqlJudge is haproxy's verdict on the answer's first bytes.
func pgsqlJudge(got []byte) Result {
	switch {
	case len(got) == 0:
		return Result{Status: L7RSP, Info: "TCPCHK got an empty response at step 3"}
	case got[0] == 'E':
		// haproxy's res.payload(6,0): the first field's text, after
		// its type byte, up to its NUL.
		var info []byte
		if len(got) > 6 {
			info = got[6:]
		}
		if i := bytes.IndexByte(info, 0); i >= 0 {
			info = info[:i]
		}
		return Result{Status: L7RSP, Info: string(info)}
	case len(got) >= 9 && got[0] == 'R' && bytes.Equal(got[1:4], []byte{0, 0, 0}) && bytes.Equal(got[5:8], []byte{0, 0, 0}) &&
		bytes.IndexByte([]byte{0, 2, 3, 4, 5, 6, 7, 9, 10}, got[8]) >= 0:
		return Result{OK: true, Status: L7OK, Info: "PostgreSQL server is ok"}
	}
	return Result{Status: L7STS, Info: "PostgreSQL unknown error"}
}

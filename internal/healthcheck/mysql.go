package healthcheck

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/netip"
	"time"
)

// MySQL is haproxy's `option mysql-check [user NAME [post-41|pre-41]]`.
// Without a user it reads the server's first packet, its handshake, and
// passes (L7OK) unless that is an error packet (L7STS, "Too many
// connections"). With a user it sends, right after connecting, a client
// authentication packet for that user with no password and a QUIT
// packet, as haproxy does, then reads the handshake and the answer to
// the authentication: an OK passes, an error packet is L7STS. A packet
// cut short is L7RSP.
type MySQL struct {
	Addr  netip.AddrPort
	User  string
	Pre41 bool
	// SendProxy is the server's send-proxy version (proxyhdr.go); 0: none.
	SendProxy int
}

// authPacket is haproxy's client authentication for user, no password,
// followed by COM_QUIT.
func (p MySQL) authPacket() []byte {
	var payload []byte
	if p.Pre41 {
		// client flags (2 bytes), max packet size (3 bytes), user NUL
		payload = append(payload, 0x00, 0x80, 0x00, 0x00, 0x01)
		payload = append(payload, p.User...)
		payload = append(payload, 0x00)
	} else {
		// client flags CLIENT_PROTOCOL_41|CLIENT_SECURE_CONNECTION (4),
		// max packet size (4), charset (1), 23 bytes of zeros, user NUL,
		// an empty auth response.
		payload = append(payload, 0x00, 0x82, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x21)
		payload = append(payload, make([]byte, 23)...)
		payload = append(payload, p.User...)
		payload = append(payload, 0x00, 0x00)
	}
	n := len(payload)
	pkt := append([]byte{byte(n), byte(n >> 8), byte(n >> 16), 0x01}, payload...)
	return append(pkt, 0x01, 0x00, 0x00, 0x00, 0x01) // COM_QUIT, sequence 0
}

// Probe runs the check.
func (p MySQL) Probe(ctx context.Context) Result {
	conn, r, ok := connect(ctx, p.Addr, nil, p.SendProxy)
	if !ok {
		return r
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if p.User != "" {
		if _, err := conn.Write(p.authPacket()); err != nil {
			return ioFailed(err, L7RSP)
		}
	}
	hs, r, ok := readMySQLPacket(ctx, conn)
	if !ok {
		return r
	}
	if len(hs) > 0 && hs[0] == 0xff {
		return Result{Status: L7STS, Info: mysqlError(hs)}
	}
	if p.User == "" {
		return Result{OK: true, Status: L7OK, Info: mysqlVersion(hs)}
	}
	ans, r, ok := readMySQLPacket(ctx, conn)
	if !ok {
		return r
	}
	if len(ans) > 0 && ans[0] == 0xff {
		return Result{Status: L7STS, Info: mysqlError(ans)}
	}
	return Result{OK: true, Status: L7OK, Info: mysqlVersion(hs)}
}

// readMySQLPacket reads one packet's payload.
func readMySQLPacket(ctx context.Context, conn net.Conn) ([]byte, Result, bool) {
	var head [4]byte
	if _, err := io.ReadFull(conn, head[:]); err != nil {
		if ctx.Err() != nil {
			return nil, Result{Status: L7TOUT, Info: "no MySQL answer in time"}, false
		}
		if r := ioFailed(err, L7RSP); r.Status == SOCKERR {
			return nil, r, false
		}
		return nil, Result{Status: L7RSP, Info: "not a MySQL packet: " + errText(err)}, false
	}
	n := int(head[0]) | int(head[1])<<8 | int(head[2])<<16
	payload := make([]byte, n)
	if _, err := io.ReadFull(conn, payload); err != nil {
		if ctx.Err() != nil {
			return nil, Result{Status: L7TOUT, Info: "no MySQL answer in time"}, false
		}
		if r := ioFailed(err, L7RSP); r.Status == SOCKERR {
			return nil, r, false
		}
		return nil, Result{Status: L7RSP, Info: "MySQL packet cut short"}, false
	}
	return payload, Result{}, true
}

// mysqlVersion is a handshake's server version (protocol 10: a NUL
// terminated string after the protocol byte).
func mysqlVersion(hs []byte) string {
	if len(hs) < 2 {
		return ""
	}
	v := hs[1:]
	if i := bytes.IndexByte(v, 0); i >= 0 {
		v = v[:i]
	}
	return string(v)
}

// mysqlError is an error packet's message (after its code and, with
// protocol 4.1, the '#' and SQL state).
func mysqlError(p []byte) string {
	if len(p) < 3 {
		return "MySQL error"
	}
	msg := p[3:]
	if len(msg) > 6 && msg[0] == '#' {
		msg = msg[6:]
	}
	return string(msg)
}

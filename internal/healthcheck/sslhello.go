package healthcheck

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/netip"
	"time"
)

// SSLHello is haproxy's `option ssl-hello-chk`: it sends a TLS
// ClientHello and passes (L6OK) when the answer starts with a TLS
// handshake or alert record, as a TLS server's does whatever it thinks
// of the hello; anything else, or a closed connection, is L6RSP; a reset
// is SOCKERR.
type SSLHello struct {
	Addr netip.AddrPort
	// SendProxy is the server's send-proxy version (proxyhdr.go); 0: none.
	SendProxy int
}

// clientHello returns the first record crypto/tls sends to a server.
func clientHello() []byte {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() {
		c := tls.Client(a, &tls.Config{InsecureSkipVerify: true, ServerName: "localhost"}) // #nosec G402: only its hello is sent
		_ = c.Handshake()
	}()
	_ = b.SetReadDeadline(time.Now().Add(5 * time.Second))
	head := make([]byte, 5)
	if _, err := io.ReadFull(b, head); err != nil {
		return nil
	}
	body := make([]byte, int(head[3])<<8|int(head[4]))
	if _, err := io.ReadFull(b, body); err != nil {
		return nil
	}
	return append(head, body...)
}

// Probe sends the hello and reads the first record's type.
func (p SSLHello) Probe(ctx context.Context) Result {
	conn, r, ok := connect(ctx, p.Addr, nil, p.SendProxy)
	if !ok {
		return r
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := conn.Write(clientHello()); err != nil {
		return ioFailed(err, L6RSP)
	}
	var typ [1]byte
	if _, err := io.ReadFull(conn, typ[:]); err != nil {
		if ctx.Err() != nil {
			return Result{Status: L6TOUT, Info: "no TLS answer in time"}
		}
		return ioFailed(err, L6RSP)
	}
	if typ[0] == 0x15 || typ[0] == 0x16 { // alert, handshake
		return Result{OK: true, Status: L6OK}
	}
	return Result{Status: L6RSP, Info: "not a TLS answer"}
}

package healthcheck

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/netip"
	"time"
)

// Step is one rule of haproxy's `tcp-check` dialogue after the connect:
// Send writes its bytes, Expect reads until the answer so far contains
// them.
type Step struct {
	Send   []byte
	Expect []byte
}

// TCPScript is haproxy's `option tcp-check` with `tcp-check send` and
// `tcp-check expect string` rules: it connects to Addr (a `tcp-check
// connect port` changes the port), then runs Steps in order. Without
// steps it is a connect check (L4OK); with any, success is L7OK, a closed
// connection or an answer without the expected bytes L7RSP, no answer in
// time L7TOUT.
type TCPScript struct {
	Addr  netip.AddrPort
	TLS   *tls.Config
	Steps []Step
	// SendProxy is the server's send-proxy version (proxyhdr.go); 0: none.
	SendProxy int
	// BufSize bounds what an expect step reads (haproxy's tune.bufsize);
	// 0: maxExpect.
	BufSize int
}

// maxExpect bounds what an expect step reads, as haproxy's check buffer.
const maxExpect = 16 << 10

// Probe runs the dialogue.
func (p TCPScript) Probe(ctx context.Context) Result {
	conn, r, ok := connect(ctx, p.Addr, p.TLS, p.SendProxy)
	if !ok {
		return r
	}
	defer conn.Close()
	if len(p.Steps) == 0 {
		if p.TLS != nil {
			return Result{OK: true, Status: L6OK}
		}
		return Result{OK: true, Status: L4OK}
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var got []byte
	buf := make([]byte, 4096)
	limit := maxExpect
	if p.BufSize > 0 {
		limit = p.BufSize
	}
	for i, st := range p.Steps {
		if st.Send != nil {
			if _, err := conn.Write(st.Send); err != nil {
				if ctx.Err() != nil {
					return Result{Status: L7TOUT, Info: fmt.Sprintf("timeout at step %d of the tcp-check", i+1)}
				}
				return ioFailed(err, L7RSP)
			}
			continue
		}
		for !bytes.Contains(got, st.Expect) {
			if len(got) >= limit {
				return Result{Status: L7RSP, Info: fmt.Sprintf("TCPCHK did not match content '%s' at step %d", st.Expect, i+1)}
			}
			n, err := conn.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil && !bytes.Contains(got, st.Expect) {
				if ctx.Err() != nil {
					return Result{Status: L7TOUT, Info: fmt.Sprintf("timeout at step %d of the tcp-check", i+1)}
				}
				if r := ioFailed(err, L7RSP); r.Status == SOCKERR {
					return r
				}
				return Result{Status: L7RSP, Info: fmt.Sprintf("TCPCHK did not match content '%s' at step %d", st.Expect, i+1)}
			}
		}
		// The next expect reads what follows this match.
		got = got[bytes.Index(got, st.Expect)+len(st.Expect):]
	}
	return Result{OK: true, Status: L7OK, Info: "(tcp-check)"}
}

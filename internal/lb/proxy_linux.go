package lb

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/lb/relay"
	"github.com/vipstack/vipstack/internal/proxyproto"
)

// sendProxy writes the PROXY protocol header on a connection just
// connected to a server with `send-proxy` or `send-proxy-v2`, before any
// of the client's bytes: the client's address, and the one it connected
// to, as haproxy sends them (internal/proxyproto's golden files). The
// socket is new and its send buffer empty, so the header (at most 52
// bytes) goes in one write; a short one fails the connect.
func (lp *loop) sendProxy(cn *conn) error {
	v := cn.srv.params.sendProxy.Load()
	if v == 0 {
		return nil
	}
	dst := cn.local
	if !dst.IsValid() {
		dst = relay.LocalAddr(cn.relay.c.FD)
	}
	h := proxyproto.Header{Version: int(v), Src: cn.peer, Dst: dst}
	b, err := h.MarshalBinary()
	if err != nil {
		return err
	}
	n, err := unix.Write(cn.relay.s.FD, b)
	if err != nil {
		return fmt.Errorf("send PROXY header: %w", err)
	}
	if n != len(b) {
		return fmt.Errorf("send PROXY header: wrote %d of %d bytes", n, len(b))
	}
	return nil
}

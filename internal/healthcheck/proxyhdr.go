package healthcheck

import (
	"context"
	"net"
	"net/netip"
	"time"

	"github.com/vipstack/vipstack/internal/proxyproto"
)

// sendProxyHeader writes, first on a check's connection to a server with
// `send-proxy` or `send-proxy-v2`, the header haproxy 2.6 sends with its
// checks (measured): version 1 names the check's own connection ("PROXY
// TCP4 <check's address> <server's address>"), version 2 is a LOCAL
// header with no address. The caller decides whether a check sends one:
// haproxy does not with the server's `port` or an explicit connect rule.
func sendProxyHeader(ctx context.Context, c *net.TCPConn, addr netip.AddrPort, version int) (Result, bool) {
	h := proxyproto.Header{Version: version, Local: version == 2}
	if version == 1 {
		local, _ := netip.ParseAddrPort(c.LocalAddr().String())
		h.Src, h.Dst = local, addr
	}
	b, err := h.MarshalBinary()
	if err != nil {
		return Result{Status: SOCKERR, Info: err.Error()}, false
	}
	if d, ok := ctx.Deadline(); ok {
		c.SetWriteDeadline(d)
		defer c.SetWriteDeadline(time.Time{})
	}
	if _, err := c.Write(b); err != nil {
		return Result{Status: L4CON, Info: errText(err)}, false
	}
	return Result{}, true
}

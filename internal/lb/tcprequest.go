package lb

import (
	"net"
	"net/netip"
	"syscall"

	"github.com/vipstack/vipstack/internal/lb/relay"
	"github.com/vipstack/vipstack/internal/lb/tcprules"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// termDenied is the termination state of a client a tcp-request content
// rule rejected: "PR", a proxy's condition at the request.
var termDenied = [2]byte{'P', 'R'}

// tcpConnRules runs the frontend's tcp-request connection rules on a
// client just accepted on fd, from peer. A rejected or dropped client's
// socket is closed here, before it counts anywhere but in the denied
// connections (a silent-drop: stats.FrontendStats.SilentDrops), and is
// not logged (haproxy 2.6). ok is false then; else src and dst are what
// set-src and set-dst made of the client's address and the one it
// connected to (dst stays invalid without connection rules).
func (f *frontend) tcpConnRules(tr *lbconfig.TCPRequest, fd int, peer netip.AddrPort) (src, dst netip.AddrPort, ok bool) {
	if len(tr.Connection) == 0 {
		return peer, netip.AddrPort{}, true
	}
	r := tcprules.Eval(tr.Connection, tr.ACLs, peer, relay.LocalAddr(fd))
	switch r.Verdict {
	case tcprules.Reject:
		f.deniedConn.Add(1)
		resetFD(fd)
		return r.Src, r.Dst, false
	case tcprules.SilentDrop:
		f.silentDrops.Add(1)
		dropFD(fd)
		return r.Src, r.Dst, false
	}
	return r.Src, r.Dst, true
}

// tcpConnRulesConn is tcpConnRules for a client of an ssl bind, before
// its handshake, as haproxy runs them: src and dst are its addresses,
// rewritten.
func (f *frontend) tcpConnRulesConn(tr *lbconfig.TCPRequest, c net.Conn) (src, dst netip.AddrPort, ok bool) {
	src, dst = tcpAddrPort(c.RemoteAddr()), tcpAddrPort(c.LocalAddr())
	r := tcprules.Eval(tr.Connection, tr.ACLs, src, dst)
	switch r.Verdict {
	case tcprules.Reject:
		f.deniedConn.Add(1)
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // a reset
		}
		c.Close()
		return r.Src, r.Dst, false
	case tcprules.SilentDrop:
		f.silentDrops.Add(1)
		if sc, ok := c.(syscall.Conn); ok {
			if rc, err := sc.SyscallConn(); err == nil {
				rc.Control(func(fd uintptr) { prepareDrop(int(fd)) })
			}
		}
		c.Close()
		return r.Src, r.Dst, false
	}
	return r.Src, r.Dst, true
}

// tcpContentRejects runs the tcp-request content rules of cn's frontend
// once it has its slot: true when one rejects it. They see layer 4 only
// (haproxycfg refuses other fetches there), which is known at once, so
// nothing waits for data or inspect-delay, as in haproxy for such rules.
func tcpContentRejects(cn *conn) bool {
	tr := cn.cfg.tcpReq
	if tr == nil || len(tr.Content) == 0 {
		return false
	}
	local := cn.local
	if !local.IsValid() {
		local = relay.LocalAddr(cn.cfd)
	}
	return tcprules.Eval(tr.Content, tr.ACLs, cn.peer, local).Verdict != tcprules.Accept
}

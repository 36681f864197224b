package lb

import (
	"net/netip"

	"github.com/vipstack/vipstack/internal/lb/relay"
	"github.com/vipstack/vipstack/internal/lb/tcprules"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// termDenied is the termination state of a client a tcp-request content
// rule rejected: "PR", a proxy's condition at the request.
var termDenied = [2]byte{'P', 'R'}

// tcpConnRules runs the frontend's tcp-request connection rules on a
// client just accepted on fd, from peer; local is the address it
// connected to when known (an ssl bind's plaintext), else read from fd
// when a rule needs it. A rejected or dropped client's socket is closed
// here, before it counts anywhere but in the denied connections (a
// silent-drop: the denied requests), and is not logged (haproxy 2.6). ok is false then; else peer and local are
// what set-src and set-dst made of them (local stays invalid when no
// rule needed it).
func (f *frontend) tcpConnRules(tr *lbconfig.TCPRequest, fd int, peer, local netip.AddrPort) (src, dst netip.AddrPort, ok bool) {
	if len(tr.Connection) == 0 {
		return peer, local, true
	}
	if !local.IsValid() {
		local = relay.LocalAddr(fd)
	}
	r := tcprules.Eval(tr.Connection, tr.ACLs, peer, local)
	switch r.Verdict {
	case tcprules.Reject:
		f.deniedConn.Add(1)
		resetFD(fd)
		return r.Src, r.Dst, false
	case tcprules.SilentDrop:
		f.silentDrops.Add(1) // haproxy 2.6 counts them in dreq (measured)
		dropFD(fd)
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

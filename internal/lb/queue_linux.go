package lb

import (
	"net/netip"

	"github.com/vipstack/vipstack/internal/lb/relay"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// closeServerDown closes every connection of s, established or
// connecting, because a check marked it DOWN (`on-marked-down
// shutdown-sessions`). haproxy's log shows such a connection's
// termination state as "D" (killed because the server went down) and the
// phase: "DD" for a relayed one, "DC" for one still connecting.
func (l *LB) closeServerDown(s *server) {
	for _, lp := range l.loops {
		lp.mu.Lock()
		for _, cn := range lp.conns {
			if cn == nil || cn.srv != s {
				continue
			}
			switch cn.state {
			case stRelaying:
				cn.term = [2]byte{'D', 'D'}
				lp.closeLocked(cn)
			case stConnecting:
				cn.term = [2]byte{'D', 'C'}
				discardClient(cn)
				lp.closeLocked(cn)
			}
		}
		lp.unlock()
	}
}

// queue makes cn, which found every server that would take it at its
// maxconn, wait in its backend's queue for a freed slot, for at most the
// queue timeout (`timeout queue`, else `timeout connect`; none: no
// bound), as haproxy's backend queue. It reports false when cn cannot
// wait: no server is merely full, or the queue is at its cap (maxqueue).
// lp.mu is held.
func (lp *loop) queue(cn *conn) bool {
	p := cn.cfg.pool
	full, limit := p.fullOnly(0)
	if !full || !p.wait.add(cn, limit) {
		return false
	}
	cn.srvQueued = true
	cn.srvQueuedAt = lp.lb.clk.Now()
	if d := cn.cfg.queueTimeout; d > 0 {
		cn.qwait = lp.lb.clk.AfterFunc(d, func() { lp.queueTimedOut(cn) })
	}
	// A slot may have been freed between the pick and the add.
	lp.lb.slotFreed(p)
	return true
}

// slotFreed hands a freed server slot of p to the first waiting client:
// its loop picks a server for it again.
func (l *LB) slotFreed(p *pool) {
	if p == nil || p.wait.len() == 0 {
		return
	}
	if full, _ := p.fullOnly(0); full && !p.anyFree() {
		return
	}
	if cn := p.wait.pop(); cn != nil {
		cn.lp.post(cn)
	}
}

// anyFree reports whether a usable server of p is below its maxconn.
func (p *pool) anyFree() bool {
	skip := p.tierSkip(0)
	for i, s := range p.servers {
		if skip&bit(i) == 0 && s.usable() && !s.full() {
			return true
		}
	}
	return false
}

// resumeQueued picks a server again for cn, taken out of the queue by a
// freed slot. lp.mu is held.
func (lp *loop) resumeQueued(cn *conn) {
	if cn.state != stConnecting || !cn.srvQueued {
		return
	}
	lp.leaveQueue(cn)
	lp.connectNext(cn)
}

// leaveQueue ends cn's wait (its timer). lp.mu is held.
func (lp *loop) leaveQueue(cn *conn) {
	cn.srvQueued = false
	if cn.qwait != nil {
		cn.qwait.Stop()
		cn.qwait = nil
	}
}

// queueTimedOut ends the wait of a client that no slot reached in time:
// haproxy closes it with termination state "sQ".
func (lp *loop) queueTimedOut(cn *conn) {
	lp.mu.Lock()
	defer lp.unlock()
	if !cn.srvQueued || cn.state != stConnecting || !cn.cfg.pool.wait.remove(cn) {
		return
	}
	lp.leaveQueue(cn)
	cn.fe.noServer.Add(1)
	discardClient(cn)
	cn.term = [2]byte{'s', 'Q'}
	lp.closeLocked(cn)
}

// queuedClientLeft closes a queued client that left: "CQ". lp.mu is
// held.
func (lp *loop) queuedClientLeft(cn *conn, term [2]byte) {
	p := cn.cfg.pool
	p.wait.remove(cn)
	p.be.leftTot.Add(1)
	p.be.leftBin.Add(cn.up)
	lp.leaveQueue(cn)
	cn.term = term
	lp.closeLocked(cn)
}

// serverAddr is where cn connects to s: its address, with the address
// the client connected to when the server was written without an IP
// (`*:PORT`, 0.0.0.0 or ::) and that port when without a port, as
// haproxy 2.6 does.
func (lp *loop) serverAddr(cn *conn, s *server) netip.AddrPort {
	if s.addr.Port() != 0 && !s.addr.Addr().IsUnspecified() {
		return s.addr
	}
	local := cn.local
	if !local.IsValid() {
		local = relay.LocalAddr(cn.relay.c.FD)
	}
	return lbconfig.ServerTarget(s.addr, local)
}

package lb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"syscall"

	"github.com/vipstack/vipstack/internal/lb/relay"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// boundAddr is where a listener listens: its address and port, and for an
// IPv6 wildcard whether the socket takes IPv4 too (`:::PORT v4v6`, or an
// IPv6 wildcard while net.ipv6.bindv6only is 0).
type boundAddr struct {
	ap   netip.AddrPort
	dual bool
	// abstract is the name of an abstract UNIX socket (abns@), ap then
	// unset.
	abstract string
}

func (a boundAddr) String() string {
	if a.abstract != "" {
		return "abns@" + a.abstract
	}
	if a.dual {
		return a.ap.String() + " v4v6"
	}
	return a.ap.String()
}

// boundOf returns where a listener for b listens; a, when not nil, is the
// address the listener got (the port the kernel chose for port 0, the
// address a host name resolved to).
func boundOf(b lbconfig.Bind, a net.Addr) boundAddr {
	if b.Abstract != "" {
		return boundAddr{abstract: b.Abstract}
	}
	ap := b.Addr
	if ta, ok := a.(*net.TCPAddr); ok {
		ap = ta.AddrPort()
	}
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	network, _, v6only := bindNetwork(b)
	wild6 := ap.Addr().Is6() && ap.Addr().IsUnspecified()
	return boundAddr{ap: ap, dual: wild6 && (network == "tcp" || v6only == 0)}
}

// overlaps reports whether sockets bound to a and b would take some of the
// same connections, as the kernel sees it when it refuses a second bind:
// the same port, and within one family the same address or a wildcard on
// either side; across families, only where one is a dual-stack IPv6
// wildcard. 198.18.0.1:9445 and 198.18.0.2:9445 do not overlap; 0.0.0.0
// and :: without v4v6 (with bindv6only 1) do not either.
func (a boundAddr) overlaps(b boundAddr) bool {
	if a.abstract != "" || b.abstract != "" {
		return a.abstract == b.abstract
	}
	if a.ap.Port() != b.ap.Port() {
		return false
	}
	x, y := a.ap.Addr().WithZone(""), b.ap.Addr().WithZone("")
	if !x.IsValid() || !y.IsValid() {
		return true // an address not known yet: the port decides
	}
	if x.Is4() == y.Is4() {
		return x.IsUnspecified() || y.IsUnspecified() || x == y
	}
	return (x.IsUnspecified() && a.dual) || (y.IsUnspecified() && b.dual)
}

// held returns where this LB listens now.
func (l *LB) held() []boundAddr {
	var out []boundAddr
	for _, t := range l.tcpLns {
		out = append(out, t.at)
	}
	for _, h := range l.httpLns {
		out = append(out, h.at)
	}
	for _, pl := range l.proxyLns {
		out = append(out, pl.at)
	}
	for _, t := range l.tlsLns {
		out = append(out, t.at)
	}
	return out
}

// portFree fails when another socket listens where b would. vipstack's
// listeners set SO_REUSEPORT (for ListenersPerBind, and to open a
// replacement beside the old listener on reload), and the kernel lets a
// socket of another process of the same user that sets it too (haproxy
// does) bind the same address and port: both would then listen, each
// taking a share of the clients, a monitor answering for the other. So an
// address this LB does not listen on yet is first bound without
// SO_REUSEPORT, which fails if anyone listens on an overlapping address
// and port. Addresses overlapping one held (where this LB listens) are not
// probed: the probe would find the LB itself. Port 0 needs no probe.
func portFree(b lbconfig.Bind, held []boundAddr) error {
	if b.Abstract != "" {
		return nil // a second bind of an abstract socket fails by itself: no SO_REUSEPORT on UNIX sockets
	}
	if !relay.ReusePortSupported || b.Addr.Port() == 0 {
		return nil
	}
	at := boundOf(b, nil)
	if slices.ContainsFunc(held, at.overlaps) {
		return nil
	}
	network, address, v6only := bindNetwork(b)
	lc := net.ListenConfig{Control: relay.ProbeControl(v6only)}
	ln, err := lc.Listen(context.Background(), network, address)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("%w: another socket listens on %s (accepted: an address and port no other process listens on; "+
				"vipstack does not share them, as haproxy would with SO_REUSEPORT: stop the other listener, haproxy for one, first)", err, shownAt(b))
		}
		return err
	}
	return ln.Close()
}

// shownAt names where b listens in an error: its address and port, or its
// host name and port.
func shownAt(b lbconfig.Bind) string {
	if b.Abstract != "" {
		return "abns@" + b.Abstract
	}
	if !b.Addr.Addr().IsValid() {
		return net.JoinHostPort(b.Host, fmt.Sprint(b.Addr.Port()))
	}
	return netip.AddrPortFrom(b.Addr.Addr().Unmap(), b.Addr.Port()).String()
}

// abnsAddr is an abstract UNIX socket's address as the status shows it,
// abns@NAME (net.UnixAddr's String would write the NULs that pad it).
type abnsAddr string

func (a abnsAddr) Network() string { return "unix" }
func (a abnsAddr) String() string  { return "abns@" + string(a) }

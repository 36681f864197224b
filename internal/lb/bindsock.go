package lb

import (
	"net"
	"syscall"

	"github.com/vipstack/vipstack/internal/lb/relay"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// listenConfig is the ListenConfig of bind b (callers set KeepAlive): relay's options (v6only)
// and then the bind's own socket options (lbconfig.BindSock). queue is
// the TCP Fast Open queue when b has tfo without a backlog: haproxy's
// listener backlog, which is then the frontend's maxconn.
func listenConfig(b lbconfig.Bind, v6only, queue int) net.ListenConfig {
	base := relay.ListenControl(v6only)
	if b.Abstract != "" {
		return net.ListenConfig{} // TCP's socket options do not apply
	}
	s := b.Sock
	if s == (lbconfig.BindSock{}) {
		return net.ListenConfig{Control: base}
	}
	if s.Backlog > 0 {
		queue = s.Backlog
	}
	return net.ListenConfig{Control: func(network, address string, c syscall.RawConn) error {
		if base != nil {
			if err := base(network, address, c); err != nil {
				return err
			}
		}
		return setBindSock(network, c, s, queue)
	}}
}

// setBacklog gives a listening socket the bind's backlog: Linux takes a
// second listen(2) on a listening socket as a new queue length.
func setBacklog(ln net.Listener, b lbconfig.Bind) error {
	if b.Sock.Backlog <= 0 {
		return nil
	}
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return nil
	}
	c, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	return listenAgain(c, b.Sock.Backlog)
}

// tfoQueue is the Fast Open queue of f's binds without a backlog, as
// haproxy 2.6 sizes it: the frontend's maxconn.
func tfoQueue(cfg *lbconfig.Config, f *lbconfig.Frontend) int {
	if f != nil && f.MaxConn > 0 {
		return f.MaxConn
	}
	if cfg.MaxConn > 0 {
		return cfg.MaxConn
	}
	return lbconfig.DefaultMaxConn
}

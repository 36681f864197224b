package lb

import (
	"net"
	"strings"
	"syscall"

	"github.com/vipstack/vipstack/internal/lb/relay"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// listenConfig is the ListenConfig of bind b (callers set KeepAlive):
// relay's options (v6only) and then the bind's own socket options
// (lbconfig.BindSock). queue is haproxy's listener backlog without a
// backlog line (the frontend's maxconn, listenQueue), which is the TCP
// Fast Open queue too.
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
	if queue <= 0 {
		queue = tfoMax
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

// setBacklog gives a listening socket haproxy's listener backlog: the
// bind's (or its proxy's) backlog, else queue. Linux takes a second
// listen(2) on a listening socket as a new queue length.
func setBacklog(ln net.Listener, b lbconfig.Bind, queue int) error {
	if b.Sock.Backlog > 0 {
		queue = b.Sock.Backlog
	}
	if queue <= 0 {
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
	return listenAgain(c, queue)
}

// listenQueue is the listen queue of f's binds without a backlog, as
// haproxy 2.6 sizes it (measured: ss's Send-Q): the frontend's maxconn,
// which the kernel caps at net.core.somaxconn. With no maxconn in the
// frontend, defaults or global, haproxy's is its open-file limit's
// (thousands), so the cap: 0 leaves Go's listen(2) at somaxconn, and
// tfoMax asks the kernel for the cap.
func listenQueue(cfg *lbconfig.Config, f *lbconfig.Frontend) int {
	if f != nil && f.MaxConn > 0 {
		return f.MaxConn
	}
	if cfg.GlobalMaxConn > 0 {
		return cfg.MaxConn
	}
	for k := range cfg.Source {
		if strings.HasPrefix(k, "defaults") && strings.HasSuffix(k, "/maxconn") {
			return cfg.MaxConn
		}
	}
	return 0
}

// tfoMax is the Fast Open queue asked for with no maxconn set: the
// kernel takes the smaller of it and net.core.somaxconn.
const tfoMax = 1 << 20

//go:build !linux

package lb

import (
	"errors"
	"syscall"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

func setBindSock(network string, c syscall.RawConn, s lbconfig.BindSock, queue int) error {
	return errors.New("bind " + s.String() + ": these socket options are supported on Linux only")
}

func listenAgain(c syscall.RawConn, n int) error {
	return errors.New("bind backlog: supported on Linux only")
}

//go:build !linux

package relay

import "syscall"

// ReusePortSupported is false off Linux: one socket per bind, and a
// changed bind is closed before its replacement opens.
const ReusePortSupported = false

func ListenControl(v6only int) func(network, address string, c syscall.RawConn) error {
	return nil
}

func ProbeControl(v6only int) func(network, address string, c syscall.RawConn) error {
	return nil
}

// SystemV6Only: Go's own choice (IPv6 only for "tcp6") stands.
func SystemV6Only() int { return -1 }

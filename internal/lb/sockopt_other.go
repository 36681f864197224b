//go:build !linux

package lb

import "syscall"

// reusePortSupported is false off Linux: one socket per bind, and a
// changed bind is closed before its replacement opens.
const reusePortSupported = false

func listenControl(v6only int) func(network, address string, c syscall.RawConn) error {
	return nil
}

func probeControl(v6only int) func(network, address string, c syscall.RawConn) error {
	return nil
}

// systemV6Only: Go's own choice (IPv6 only for "tcp6") stands.
func systemV6Only() int { return -1 }

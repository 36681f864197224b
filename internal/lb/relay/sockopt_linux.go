package relay

import (
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ReusePortSupported says whether several sockets may share a TCP port,
// which lets Apply open a new listener before closing the old one and
// Options.ListenersPerBind spread accepts over sockets.
const ReusePortSupported = true

// ListenControl sets SO_REUSEPORT on a listening socket and, for an IPv6
// wildcard bind without v4v6 (v6only >= 0), IPV6_V6ONLY as the kernel's
// default says (net.ipv6.bindv6only), as haproxy leaves it.
func ListenControl(v6only int) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
			if serr == nil && v6only >= 0 && network == "tcp6" {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, v6only)
			}
			// Accepted sockets inherit it (the relay checks the first
			// one and sets it on each if not), so relayed messages leave
			// at once without a setsockopt per client.
			if serr == nil {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
			}
		})
		if err != nil {
			return err
		}
		return os.NewSyscallError("setsockopt", serr)
	}
}

// ProbeControl sets IPV6_V6ONLY as ListenControl does, and nothing else:
// a socket without SO_REUSEPORT cannot bind where another one listens,
// whatever that one set.
func ProbeControl(v6only int) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		if v6only < 0 || network != "tcp6" {
			return nil
		}
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, v6only)
		})
		if err != nil {
			return err
		}
		return os.NewSyscallError("setsockopt", serr)
	}
}

// SystemV6Only is net.ipv6.bindv6only: 1 when IPv6 wildcard sockets take
// IPv6 only by default.
func SystemV6Only() int {
	b, err := os.ReadFile("/proc/sys/net/ipv6/bindv6only")
	if err == nil && strings.TrimSpace(string(b)) == "1" {
		return 1
	}
	return 0
}

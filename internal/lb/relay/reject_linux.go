package relay

import "golang.org/x/sys/unix"

// Reset closes the socket fd with a reset (SO_LINGER 0), as haproxy
// closes a connection a tcp-request rule rejects.
func Reset(fd int) {
	unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
	Close(fd)
}

// SilentDrop closes the socket fd without telling the peer, as haproxy's
// silent-drop does: in TCP repair mode (CAP_NET_ADMIN) the close sends
// nothing; without it, a reset with a hop limit of 1, which no router
// forwards.
func SilentDrop(fd int) {
	PrepareDrop(fd)
	Close(fd)
}

// PrepareDrop sets the socket fd up so that its close is SilentDrop's.
func PrepareDrop(fd int) {
	if unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_REPAIR, 1) == nil {
		return
	}
	unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TTL, 1)
	unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_UNICAST_HOPS, 1)
	unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
}

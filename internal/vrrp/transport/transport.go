package transport

import (
	"fmt"
	"net/netip"
)

// Packet is one received VRRP message.
type Packet struct {
	Payload []byte
	Src     netip.Addr
	Dst     netip.Addr
	TTL     int // TTL (IPv4) or hop limit (IPv6); -1 when the kernel did not say
	IfIndex int
}

// Conn is a VRRP socket for one address family.
type Conn interface {
	// ReadPacket blocks until a packet arrives or the socket is closed.
	ReadPacket() (Packet, error)
	// WritePacket sends payload from src to dst out of interface ifIndex.
	WritePacket(payload []byte, src, dst netip.Addr, ifIndex int) error
	// JoinGroup and LeaveGroup manage a multicast group on an interface:
	// the VRRP group (224.0.0.18, ff02::12) unless keepalived's
	// vrrp_mcast_group4/6 names another.
	JoinGroup(ifIndex int, group netip.Addr) error
	LeaveGroup(ifIndex int, group netip.Addr) error
	Close() error
}

// OpError is a failed socket operation.
type OpError struct {
	Op     string
	Family int
	Err    error
}

func (e *OpError) Error() string {
	return fmt.Sprintf("vrrp transport: %s (IPv%d): %v", e.Op, e.Family, e.Err)
}
func (e *OpError) Unwrap() error { return e.Err }

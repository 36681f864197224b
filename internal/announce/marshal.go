package announce

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/mdlayher/ndp"
)

// ErrUnsupported is returned by New on systems where sending is not
// implemented.
var ErrUnsupported = errors.New("announce: unsupported on this operating system (Linux only)")

// Frame layout constants.
const (
	etherTypeARP = 0x0806
	etherTypeIP4 = 0x0800
	arpHTEther   = 1
	arpRequest   = 1
	// garpLen is 14 (Ethernet header) + 28 (ARP for IPv4 over Ethernet).
	// Like the kernel and keepalived, the frame is not padded to 60 bytes:
	// the NIC pads short frames on the wire.
	garpLen = 42
)

// allNodes is the IPv6 all-nodes link-local multicast group.
var allNodes = netip.MustParseAddr("ff02::1")

func checkMAC(mac net.HardwareAddr) error {
	if len(mac) != 6 {
		return fmt.Errorf("hardware address %q: %d bytes, want a 6-byte Ethernet MAC", mac.String(), len(mac))
	}
	return nil
}

// MarshalGARP returns the full Ethernet frame of a gratuitous ARP request
// for ip from mac: destination ff:ff:ff:ff:ff:ff, ARP request with
// sender = target = ip, sender hardware address mac and target hardware
// address ff:ff:ff:ff:ff:ff, as keepalived sends (42 bytes, unpadded).
func MarshalGARP(mac net.HardwareAddr, ip netip.Addr) ([]byte, error) {
	return appendGARP(make([]byte, 0, garpLen), mac, ip)
}

// appendGARP appends MarshalGARP's frame to b.
func appendGARP(b []byte, mac net.HardwareAddr, ip netip.Addr) ([]byte, error) {
	if err := checkMAC(mac); err != nil {
		return nil, fmt.Errorf("marshal gratuitous ARP: %w", err)
	}
	ip = ip.Unmap()
	if !ip.Is4() || ip.IsUnspecified() || ip.IsMulticast() {
		return nil, fmt.Errorf("marshal gratuitous ARP: address %s: want a unicast IPv4 address", ip)
	}
	n := len(b)
	b = append(b, make([]byte, garpLen)...) // no allocation with room in b
	f := b[n:]
	copy(f[0:6], broadcast)
	copy(f[6:12], mac)
	binary.BigEndian.PutUint16(f[12:14], etherTypeARP)
	a := f[14:]
	binary.BigEndian.PutUint16(a[0:2], arpHTEther)
	binary.BigEndian.PutUint16(a[2:4], etherTypeIP4)
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:8], arpRequest)
	ip4 := ip.As4()
	copy(a[8:14], mac)
	copy(a[14:18], ip4[:])
	copy(a[18:24], broadcast)
	copy(a[24:28], ip4[:])
	return b, nil
}

var broadcast = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// MarshalNA returns the ICMPv6 message (type 136) of an unsolicited
// Neighbor Advertisement for ip from mac: Override set, Router and
// Solicited clear, with a Target Link-Layer Address option carrying mac.
// The checksum field is zero: the kernel fills it on an ICMPv6 socket.
func MarshalNA(mac net.HardwareAddr, ip netip.Addr) ([]byte, error) {
	if err := checkMAC(mac); err != nil {
		return nil, fmt.Errorf("marshal neighbor advertisement: %w", err)
	}
	if !ip.Is6() || ip.Is4In6() || ip.IsUnspecified() || ip.IsMulticast() {
		return nil, fmt.Errorf("marshal neighbor advertisement: address %s: want a unicast IPv6 address", ip)
	}
	b, err := ndp.MarshalMessage(&ndp.NeighborAdvertisement{
		Override:      true,
		TargetAddress: ip.WithZone(""),
		Options: []ndp.Option{&ndp.LinkLayerAddress{
			Direction: ndp.Target,
			Addr:      mac,
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("marshal neighbor advertisement for %s: %w", ip, err)
	}
	return b, nil
}

//go:build ignore

// pcap2bin extracts the first VRRP message from a classic pcap file of
// Ethernet frames (as written by tcpdump -w) and writes its payload, without
// Ethernet and IP headers, to NAME.bin, and its IP source and destination to
// NAME.txt. capture.sh runs it:
//
//	go run pcap2bin.go capture.pcap NAME
package main

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go run pcap2bin.go FILE.pcap NAME")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "pcap2bin:", err)
		os.Exit(1)
	}
}

func run(pcapFile, name string) error {
	raw, err := os.ReadFile(pcapFile)
	if err != nil {
		return err
	}
	frames, err := parsePcap(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", pcapFile, err)
	}
	for _, f := range frames {
		src, dst, hopLimit, payload, ok := vrrpPayload(f)
		if !ok {
			continue
		}
		txt := fmt.Sprintf("# VRRP payload in %s.bin, captured from keepalived by capture.sh.\n"+
			"# IP TTL/hop limit was %d.\nsrc %v\ndst %v\n", filepath.Base(name), hopLimit, src, dst)
		if err := os.WriteFile(name+".bin", payload, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(name+".txt", []byte(txt), 0o644); err != nil {
			return err
		}
		fmt.Printf("%s: %v > %v ttl %d: %s\n", filepath.Base(name), src, dst, hopLimit, hex.EncodeToString(payload))
		return nil
	}
	return fmt.Errorf("%s: no VRRP packet among %d frames", pcapFile, len(frames))
}

// parsePcap returns the frames of a classic pcap file with link type Ethernet.
func parsePcap(b []byte) ([][]byte, error) {
	if len(b) < 24 {
		return nil, errors.New("short pcap header")
	}
	var bo binary.ByteOrder
	switch binary.LittleEndian.Uint32(b) {
	case 0xa1b2c3d4, 0xa1b23c4d:
		bo = binary.LittleEndian
	case 0xd4c3b2a1, 0x4d3cb2a1:
		bo = binary.BigEndian
	default:
		return nil, errors.New("not a classic pcap file (pcapng is not supported)")
	}
	if lt := bo.Uint32(b[20:]); lt != 1 {
		return nil, fmt.Errorf("link type %d, want 1 (Ethernet)", lt)
	}
	var frames [][]byte
	for b = b[24:]; len(b) >= 16; {
		n := int(bo.Uint32(b[8:]))
		if len(b) < 16+n {
			return nil, errors.New("truncated record")
		}
		frames = append(frames, b[16:16+n])
		b = b[16+n:]
	}
	return frames, nil
}

// vrrpPayload returns the VRRP message of an Ethernet frame carrying IPv4 or
// IPv6 (without extension headers) with protocol 112, bounded by the IP
// length field so that Ethernet padding is not included.
func vrrpPayload(f []byte) (src, dst netip.Addr, hop int, payload []byte, ok bool) {
	if len(f) < 14 {
		return
	}
	ip := f[14:]
	switch binary.BigEndian.Uint16(f[12:]) {
	case 0x0800:
		if len(ip) < 20 || ip[9] != 112 {
			return
		}
		ihl, total := int(ip[0]&0x0f)*4, int(binary.BigEndian.Uint16(ip[2:]))
		if total > len(ip) || ihl > total {
			return
		}
		src, _ = netip.AddrFromSlice(ip[12:16])
		dst, _ = netip.AddrFromSlice(ip[16:20])
		return src, dst, int(ip[8]), ip[ihl:total], true
	case 0x86dd:
		if len(ip) < 40 || ip[6] != 112 {
			return
		}
		n := int(binary.BigEndian.Uint16(ip[4:]))
		if 40+n > len(ip) {
			return
		}
		src, _ = netip.AddrFromSlice(ip[8:24])
		dst, _ = netip.AddrFromSlice(ip[24:40])
		return src, dst, int(ip[7]), ip[40 : 40+n], true
	}
	return
}

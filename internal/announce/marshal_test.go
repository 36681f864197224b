package announce

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mdlayher/ethernet"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	var clean strings.Builder
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		clean.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(clean.String())
	if err != nil {
		t.Fatalf("bad hex: %v", err)
	}
	return b
}

func readHex(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return mustHex(t, string(b))
}

var (
	testMAC = net.HardwareAddr{0x00, 0x11, 0x22, 0x33, 0x44, 0x55}
	kaMAC   = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0x11}
)

func TestMarshalGARP(t *testing.T) {
	tests := []struct {
		name string
		mac  net.HardwareAddr
		ip   netip.Addr
		want []byte
	}{
		{name: "golden", mac: testMAC, ip: netip.MustParseAddr("198.18.0.200"), want: mustHex(t, `
			ffffffffffff 001122334455 0806
			0001 0800 06 04 0001 001122334455 c61200c8 ffffffffffff c61200c8`)},
		{name: "IPv4-mapped form is the same", mac: testMAC, ip: netip.MustParseAddr("::ffff:198.18.0.200"), want: mustHex(t, `
			ffffffffffff 001122334455 0806
			0001 0800 06 04 0001 001122334455 c61200c8 ffffffffffff c61200c8`)},
		{name: "same bytes as keepalived 2.2.7", mac: kaMAC, ip: netip.MustParseAddr("198.18.0.100"),
			want: readHex(t, "keepalived-2.2.7-garp.hex")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MarshalGARP(tt.mac, tt.ip)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("MarshalGARP (-want +got):\n%s", diff)
			}
			// What a standard decoder makes of it.
			var f ethernet.Frame
			if err := f.UnmarshalBinary(got); err != nil {
				t.Fatal(err)
			}
			if f.Destination.String() != "ff:ff:ff:ff:ff:ff" || f.Source.String() != tt.mac.String() || f.EtherType != ethernet.EtherTypeARP {
				t.Errorf("Ethernet header: dst %s src %s type %v", f.Destination, f.Source, f.EtherType)
			}
		})
	}
}

// pseudoChecksum computes the ICMPv6 checksum (RFC 4443 section 2.3) of
// body, whose checksum field must be zero.
func pseudoChecksum(src, dst netip.Addr, body []byte) uint16 {
	var ph []byte
	ph = append(ph, src.AsSlice()...)
	ph = append(ph, dst.AsSlice()...)
	ph = binary.BigEndian.AppendUint32(ph, uint32(len(body)))
	ph = append(ph, 0, 0, 0, 58)
	ph = append(ph, body...)
	if len(ph)%2 == 1 {
		ph = append(ph, 0)
	}
	var sum uint32
	for i := 0; i < len(ph); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ph[i:]))
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// icmpOfFrame returns the IPv6 source, destination, hop limit and ICMPv6
// body of an Ethernet frame carrying IPv6.
func icmpOfFrame(t testing.TB, frame []byte) (src, dst netip.Addr, hop int, body []byte) {
	t.Helper()
	var f ethernet.Frame
	if err := f.UnmarshalBinary(frame); err != nil {
		t.Fatal(err)
	}
	p := f.Payload
	if f.EtherType != ethernet.EtherTypeIPv6 || len(p) < 40 || p[0]>>4 != 6 || p[6] != 58 {
		t.Fatalf("not ICMPv6 over IPv6: %x", frame)
	}
	plen := int(binary.BigEndian.Uint16(p[4:6]))
	src = netip.AddrFrom16([16]byte(p[8:24]))
	dst = netip.AddrFrom16([16]byte(p[24:40]))
	return src, dst, int(p[7]), p[40 : 40+plen]
}

func TestMarshalNA(t *testing.T) {
	ka := readHex(t, "keepalived-2.2.7-na.hex")
	kaSrc, kaDst, kaHop, kaBody := icmpOfFrame(t, ka)
	kaZeroed := bytes.Clone(kaBody)
	kaZeroed[2], kaZeroed[3] = 0, 0
	tests := []struct {
		name string
		mac  net.HardwareAddr
		ip   netip.Addr
		want []byte
	}{
		{name: "golden", mac: testMAC, ip: netip.MustParseAddr("fd00:bb::200"), want: mustHex(t, `
			88 00 0000 20000000 fd0000bb000000000000000000000200
			02 01 001122334455`)},
		{name: "zone dropped", mac: testMAC, ip: netip.MustParseAddr("fe80::1%eth0"), want: mustHex(t, `
			88 00 0000 20000000 fe800000000000000000000000000001
			02 01 001122334455`)},
		{name: "same bytes as keepalived 2.2.7 (checksum left to the kernel)", mac: kaMAC,
			ip: netip.MustParseAddr("fd00:bb::100"), want: kaZeroed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MarshalNA(tt.mac, tt.ip)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("MarshalNA (-want +got):\n%s", diff)
			}
		})
	}
	// The capture also pins down the IPv6 header keepalived used and checks
	// the checksum helper the root test relies on.
	if kaSrc != netip.MustParseAddr("fd00:bb::100") || kaDst != allNodes || kaHop != 255 {
		t.Errorf("keepalived NA: %s -> %s hop limit %d", kaSrc, kaDst, kaHop)
	}
	if got, want := pseudoChecksum(kaSrc, kaDst, kaZeroed), binary.BigEndian.Uint16(kaBody[2:4]); got != want {
		t.Errorf("checksum of the keepalived NA = %#04x, captured %#04x", got, want)
	}
}

func TestMarshalErrors(t *testing.T) {
	tests := []struct {
		name    string
		garp    bool
		mac     net.HardwareAddr
		ip      netip.Addr
		wantErr string
	}{
		{name: "garp short mac", garp: true, mac: testMAC[:4], ip: netip.MustParseAddr("198.18.0.1"), wantErr: "want a 6-byte Ethernet MAC"},
		{name: "garp ipv6", garp: true, mac: testMAC, ip: netip.MustParseAddr("fd00::1"), wantErr: "want a unicast IPv4 address"},
		{name: "garp zero", garp: true, mac: testMAC, ip: netip.Addr{}, wantErr: "want a unicast IPv4 address"},
		{name: "garp multicast", garp: true, mac: testMAC, ip: netip.MustParseAddr("224.0.0.18"), wantErr: "want a unicast IPv4 address"},
		{name: "na ipv4", mac: testMAC, ip: netip.MustParseAddr("198.18.0.1"), wantErr: "want a unicast IPv6 address"},
		{name: "na mapped", mac: testMAC, ip: netip.MustParseAddr("::ffff:198.18.0.1"), wantErr: "want a unicast IPv6 address"},
		{name: "na multicast", mac: testMAC, ip: allNodes, wantErr: "want a unicast IPv6 address"},
		{name: "na long mac", mac: append(bytes.Clone(testMAC), 0, 0), ip: netip.MustParseAddr("fd00::1"), wantErr: "8 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.garp {
				_, err = MarshalGARP(tt.mac, tt.ip)
			} else {
				_, err = MarshalNA(tt.mac, tt.ip)
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

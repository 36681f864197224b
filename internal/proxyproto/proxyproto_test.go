package proxyproto

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var cmpAddrs = cmpopts.EquateComparable(netip.AddrPort{})

// TestGoldenFromHaproxy: the headers haproxy 2.6.12 sent (captured on
// loopback: a client from 127.0.0.1:35485 to a frontend on :17201 whose
// server has send-proxy, and so on; the v2 LOCAL one is a health check's)
// read as these headers, and writing them gives the same bytes.
func TestGoldenFromHaproxy(t *testing.T) {
	ap := netip.MustParseAddrPort
	for _, tc := range []struct {
		file string
		want Header
	}{
		{"haproxy-v1-tcp4.bin", Header{Version: 1, Src: ap("127.0.0.1:35485"), Dst: ap("127.0.0.1:17201")}},
		{"haproxy-v1-tcp6.bin", Header{Version: 1, Src: ap("[::1]:54919"), Dst: ap("[::1]:17204")}},
		{"haproxy-v2-tcp4.bin", Header{Version: 2, Src: ap("127.0.0.1:49759"), Dst: ap("127.0.0.1:17202")}},
		{"haproxy-v2-tcp6.bin", Header{Version: 2, Src: ap("[::1]:40659"), Dst: ap("[::1]:17203")}},
		{"haproxy-v2-check-local.bin", Header{Version: 2, Local: true}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			var got Header
			if err := got.UnmarshalBinary(b); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmpAddrs); diff != "" {
				t.Errorf("read (-want +got):\n%s", diff)
			}
			out, err := tc.want.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != string(b) {
				t.Errorf("written:\n%q\nhaproxy sent:\n%q", out, b)
			}
		})
	}
}

// TestMarshalForms: mixed families go out as IPv6, IPv4-mapped, and
// what cannot be written is refused.
func TestMarshalForms(t *testing.T) {
	ap := netip.MustParseAddrPort
	for _, tc := range []struct {
		name    string
		h       Header
		want    string
		wantErr bool
	}{
		{name: "v1 mixed", h: Header{Version: 1, Src: ap("198.18.0.1:1000"), Dst: ap("[fd00::1]:80")},
			want: "PROXY TCP6 ::ffff:198.18.0.1 fd00::1 1000 80\r\n"},
		{name: "v1 unknown", h: Header{Version: 1, Local: true}, want: "PROXY UNKNOWN\r\n"},
		{name: "v2 mixed", h: Header{Version: 2, Src: ap("198.18.0.1:1"), Dst: ap("[fd00::1]:2")},
			want: string(sig) + "\x21\x21\x00\x24" + "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xc6\x12\x00\x01" +
				"\xfd\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01" + "\x00\x01\x00\x02"},
		{name: "v2 with TLVs", h: Header{Version: 2, Src: ap("198.18.0.1:1"), Dst: ap("198.18.0.2:2"), TLVs: []byte{0x04, 0x00, 0x00}},
			want: string(sig) + "\x21\x11\x00\x0f" + "\xc6\x12\x00\x01\xc6\x12\x00\x02\x00\x01\x00\x02" + "\x04\x00\x00"},
		{name: "no addresses", h: Header{Version: 2}, wantErr: true},
		{name: "version 3", h: Header{Version: 3, Local: true}, wantErr: true},
		{name: "v1 TLVs", h: Header{Version: 1, Local: true, TLVs: []byte{1}}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.h.MarshalBinary()
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if string(b) != tc.want {
				t.Errorf("got %q, want %q", b, tc.want)
			}
		})
	}
}

// TestParseErrors: a start of a header asks for more bytes, anything
// else names what is wrong.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		is       error // nil: any other error
	}{
		{name: "empty", in: "", is: ErrTruncated},
		{name: "start of v2", in: "\r\n\r\n\x00", is: ErrTruncated},
		{name: "v2 short body", in: string(sig) + "\x21\x11\x00\x0c\x7f\x00", is: ErrTruncated},
		{name: "start of v1", in: "PROX", is: ErrTruncated},
		{name: "v1 without CRLF yet", in: "PROXY TCP4 1.2.3.4", is: ErrTruncated},
		{name: "http", in: "GET / HTTP/1.1\r\n", is: ErrNotProxy},
		{name: "v1 family", in: "PROXY UDP4 1.2.3.4 1.2.3.5 1 2\r\n"},
		{name: "v1 family mismatch", in: "PROXY TCP4 ::1 ::1 1 2\r\n"},
		{name: "v1 leading zero port", in: "PROXY TCP4 1.2.3.4 1.2.3.5 01 2\r\n"},
		{name: "v1 port too large", in: "PROXY TCP4 1.2.3.4 1.2.3.5 65536 2\r\n"},
		{name: "v1 too long", in: "PROXY TCP6 " + string(make([]byte, 120))},
		{name: "v2 version 1", in: string(sig) + "\x11\x11\x00\x00"},
		{name: "v2 UDP", in: string(sig) + "\x21\x12\x00\x0c" + string(make([]byte, 12))},
		{name: "v2 short address block", in: string(sig) + "\x21\x21\x00\x0c" + string(make([]byte, 12))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Parse([]byte(tc.in))
			if err == nil {
				t.Fatal("Parse accepted it")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v, want %v", err, tc.is)
			}
			if tc.is == nil && (errors.Is(err, ErrTruncated) || errors.Is(err, ErrNotProxy)) {
				t.Errorf("error %v, want one that says what is wrong", err)
			}
		})
	}
}

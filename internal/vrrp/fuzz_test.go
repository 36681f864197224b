package vrrp

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzUnmarshal checks that Unmarshal never panics, never modifies its
// input, rejects only with a *ParseError, and that Marshal of anything it
// accepts reproduces the input exactly; UnmarshalTo into an Advertisement
// reused from an earlier input, and AppendMarshal into a reused buffer,
// agree with them. The one allowed difference: the four
// reserved bits of a v3 message are ignored on reception (RFC 5798 section
// 5.2.6) and written as zero, which also changes the checksum.
//
// With fix set, the harness first writes the correct checksum into the
// input, so that the fuzzer gets past the checksum check.
func FuzzUnmarshal(f *testing.F) {
	for _, g := range goldens {
		f.Add(mustHex(f, g.wire), g.src.AsSlice(), g.dst.AsSlice(), false)
	}
	for _, c := range rejectCases(f) {
		f.Add(c.wire, c.src.AsSlice(), c.dst.AsSlice(), false)
		f.Add(c.wire, c.src.AsSlice(), c.dst.AsSlice(), true)
	}
	bins, err := filepath.Glob(filepath.Join("testdata", "*.bin"))
	if err != nil || len(bins) == 0 {
		f.Fatalf("no captures in testdata: %v", err)
	}
	for _, bin := range bins {
		b, src, dst := readCapture(f, strings.TrimSuffix(filepath.Base(bin), ".bin"))
		f.Add(b, src.AsSlice(), dst.AsSlice(), false)
	}

	f.Fuzz(func(t *testing.T, b, srcb, dstb []byte, fix bool) {
		// A slice of the wrong length gives the invalid Addr, which
		// Unmarshal must reject too.
		src, _ := netip.AddrFromSlice(srcb)
		dst, _ := netip.AddrFromSlice(dstb)
		if fix && len(b) >= headerLen && src.IsValid() && dst.IsValid() && src.Unmap().Is4() == dst.Unmap().Is4() {
			b = withChecksum(b, src, dst)
		}
		in := bytes.Clone(b)

		a, err := Unmarshal(b, src, dst)
		if !bytes.Equal(in, b) {
			t.Fatalf("Unmarshal modified its input:\n got % x\nwant % x", b, in)
		}
		reused := Advertisement{Version: 2, AuthType: AuthSimple, AuthData: Password("left"), Addresses: make([]netip.Addr, 3, 8)}
		errTo := UnmarshalTo(&reused, b, src, dst)
		if (err == nil) != (errTo == nil) || (err != nil && err.Error() != errTo.Error()) {
			t.Fatalf("Unmarshal error %v, UnmarshalTo error %v", err, errTo)
		}
		if err == nil && (a.Version != reused.Version || a.VRID != reused.VRID || a.Priority != reused.Priority ||
			a.Interval != reused.Interval || a.AuthType != reused.AuthType || a.AuthData != reused.AuthData ||
			a.Checksum != reused.Checksum || !slices.Equal(a.Addresses, reused.Addresses)) {
			t.Fatalf("UnmarshalTo into a reused Advertisement gave %+v, Unmarshal %+v", reused, *a)
		}
		if err != nil {
			if r := ReasonOf(err); r == ReasonMalformed {
				t.Fatalf("Unmarshal error %v is not a *ParseError", err)
			}
			return
		}

		out, err := a.Marshal(src, dst)
		if err != nil {
			t.Fatalf("Marshal of accepted %v: %v\ninput % x", a, err, in)
		}
		want := in
		if a.Version == 3 && in[4]&0xf0 != 0 {
			want = bytes.Clone(in)
			want[4] &= 0x0f
			want = withChecksum(want, src, dst)
		}
		if !bytes.Equal(out, want) {
			t.Fatalf("Marshal(Unmarshal(b)) != b for %v from %v to %v\n got % x\nwant % x", a, src, dst, out, want)
		}
		again, err := a.AppendMarshal(bytes.Repeat([]byte{0xee}, len(out)+3)[:1], src, dst)
		if err != nil || !bytes.Equal(again[1:], out) || again[0] != 0xee {
			t.Fatalf("AppendMarshal after one byte gave % x (%v), Marshal % x", again, err, out)
		}
		if got := binary.BigEndian.Uint16(out[6:]); a.Checksum != got {
			t.Fatalf("Marshal set Checksum %#04x, wrote %#04x", a.Checksum, got)
		}
	})
}

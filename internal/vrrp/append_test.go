package vrrp

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestAppendMarshalGolden: AppendMarshal writes the golden bytes after
// what b holds, leaving that alone, and the same bytes again into a
// reused buffer.
func TestAppendMarshalGolden(t *testing.T) {
	for _, tt := range goldens {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.adv
			prefix := []byte{0xde, 0xad}
			got, err := a.AppendMarshal(bytes.Clone(prefix), tt.src, tt.dst)
			if err != nil {
				t.Fatalf("AppendMarshal: %v", err)
			}
			want := append(bytes.Clone(prefix), mustHex(t, tt.wire)...)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("AppendMarshal after a prefix (-want +got):\n%s", diff)
			}
			// A reused buffer holding a longer, different message.
			reused := bytes.Repeat([]byte{0xff}, 64)
			got, err = a.AppendMarshal(reused[:0], tt.src, tt.dst)
			if err != nil {
				t.Fatalf("AppendMarshal into a reused buffer: %v", err)
			}
			if diff := cmp.Diff(mustHex(t, tt.wire), got); diff != "" {
				t.Errorf("AppendMarshal into a reused buffer (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAppendMarshalErrorKeepsBuffer: a message that cannot be encoded
// leaves b as it was.
func TestAppendMarshalErrorKeepsBuffer(t *testing.T) {
	a := Advertisement{Version: 4, VRID: 1, Priority: 1, Interval: time.Second}
	b := []byte{1, 2, 3}
	got, err := a.AppendMarshal(b, src4, MulticastIPv4)
	if err == nil {
		t.Fatal("AppendMarshal accepted version 4")
	}
	if !bytes.Equal(got, []byte{1, 2, 3}) {
		t.Errorf("AppendMarshal returned % x on an error, want the buffer unchanged (01 02 03)", got)
	}
}

// TestUnmarshalToReuses: UnmarshalTo decodes each golden into one reused
// Advertisement, whatever the one before left there (more addresses, auth
// data, another version).
func TestUnmarshalToReuses(t *testing.T) {
	var a Advertisement
	for _, order := range [][]int{{0, 1, 2, 3, 4, 5, 6}, {6, 5, 4, 3, 2, 1, 0}} {
		for _, i := range order {
			tt := goldens[i]
			if err := UnmarshalTo(&a, mustHex(t, tt.wire), tt.src, tt.dst); err != nil {
				t.Fatalf("%s: UnmarshalTo: %v", tt.name, err)
			}
			want := tt.adv
			if want.Addresses == nil {
				want.Addresses = []netip.Addr{}
			}
			got := a
			if got.Addresses == nil {
				got.Addresses = []netip.Addr{}
			}
			if diff := cmp.Diff(want, got, addrCmp); diff != "" {
				t.Errorf("%s: UnmarshalTo into a reused Advertisement (-want +got):\n%s", tt.name, diff)
			}
		}
	}
}

// TestAdvertCodecAllocs: encoding into a reused buffer and decoding into a
// reused Advertisement allocate nothing, for each golden (a master sends
// one advertisement per interval per instance, a backup decodes as many:
// with 1,000 instances the collector ran every few seconds at rest,
// docs/design/memory.md).
func TestAdvertCodecAllocs(t *testing.T) {
	for _, tt := range goldens {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.adv
			buf := make([]byte, 0, 128)
			wire := mustHex(t, tt.wire)
			var dec Advertisement
			if err := UnmarshalTo(&dec, wire, tt.src, tt.dst); err != nil { // sizes dec.Addresses
				t.Fatal(err)
			}
			var err error
			enc := testing.AllocsPerRun(100, func() {
				buf, err = a.AppendMarshal(buf[:0], tt.src, tt.dst)
			})
			if err != nil {
				t.Fatal(err)
			}
			decs := testing.AllocsPerRun(100, func() {
				err = UnmarshalTo(&dec, wire, tt.src, tt.dst)
			})
			if err != nil {
				t.Fatal(err)
			}
			if enc != 0 || decs != 0 {
				t.Errorf("allocations per message: encode %v, decode %v; want 0 and 0", enc, decs)
			}
		})
	}
}

package proxyproto

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzRoundTrip: whatever Parse reads, written again, reads as the same
// header, of the length written. Seeded with haproxy's captured headers.
func FuzzRoundTrip(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.bin"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n"))
	f.Add([]byte("PROXY TCP6 ::ffff:1.2.3.4 fd00::1 65535 0\r\nGET /"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := Parse(b)
		if err != nil {
			return
		}
		if n <= 0 || n > len(b) {
			t.Fatalf("length %d of %d bytes", n, len(b))
		}
		out, err := h.MarshalBinary()
		if err != nil {
			t.Fatalf("read %+v from %q, cannot write it: %v", h, b[:n], err)
		}
		again, m, err := Parse(out)
		if err != nil || m != len(out) {
			t.Fatalf("%q: reread %d of %d bytes: %v", out, m, len(out), err)
		}
		if diff := cmp.Diff(h, again, cmpAddrs); diff != "" {
			t.Fatalf("round trip of %q (-first +again):\n%s", b[:n], diff)
		}
	})
}

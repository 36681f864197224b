package bfd

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzUnmarshal checks that UnmarshalBinary never panics, never modifies
// its input, refuses only with a *ParseError, and that MarshalBinary of
// anything it accepts reproduces the first Length bytes exactly, which
// decode to the same packet again. Seeds: the hand-written goldens, the
// refused packets and bfdd's captures in testdata.
func FuzzUnmarshal(f *testing.F) {
	for _, g := range goldens {
		f.Add(mustHex(f, g.wire))
	}
	for _, r := range rejects {
		f.Add(mustHex(f, r.wire))
	}
	bins, err := filepath.Glob(filepath.Join("testdata", "*.bin"))
	if err != nil || len(bins) == 0 {
		f.Fatalf("no captures in testdata: %v", err)
	}
	for _, bin := range bins {
		b, err := os.ReadFile(bin)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in := bytes.Clone(b)
		p, err := Parse(b)
		if !bytes.Equal(in, b) {
			t.Fatalf("Parse modified its input:\n got % x\nwant % x", b, in)
		}
		if err != nil {
			if _, ok := err.(*ParseError); !ok {
				t.Fatalf("Parse error %v is a %T, want *ParseError", err, err)
			}
			return
		}
		out, err := p.MarshalBinary()
		if err != nil {
			t.Fatalf("MarshalBinary of accepted %v: %v\ninput % x", p, err, in)
		}
		if want := in[:in[3]]; !bytes.Equal(out, want) {
			t.Fatalf("MarshalBinary(Parse(b)) != b[:Length] for %v\n got % x\nwant % x", p, out, want)
		}
		q, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse of MarshalBinary output % x: %v", out, err)
		}
		if diff := cmp.Diff(p, q); diff != "" {
			t.Fatalf("decode-encode-decode changed the packet (-first +second):\n%s", diff)
		}
	})
}

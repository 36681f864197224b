package pages

import (
	"fmt"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// smapsFixture is /proc/PID/smaps of a process of /usr/bin/vs, cut down:
// its text, read-only data, a relocated read-only segment (a PIE build's
// RELRO: private copies), its data, an anonymous mapping, and libc.
const smapsFixture = `00400000-02652000 r-xp 00000000 fe:00 12354333                           /usr/bin/vs
Size:              35144 kB
Rss:               25288 kB
Anonymous:             0 kB
02652000-04cbd000 r--p 02252000 fe:00 12354333                           /usr/bin/vs
Size:              39340 kB
Rss:               25576 kB
Anonymous:             0 kB
04cbd000-04cc0000 r--p 048bd000 fe:00 12354333                           /usr/bin/vs
Size:                 12 kB
Anonymous:            12 kB
04cc0000-04d7c000 rw-p 048c0000 fe:00 12354333                           /usr/bin/vs
Size:                752 kB
Anonymous:           412 kB
04d7c000-06dcd000 rw-p 00000000 00:00 0 
Size:              33092 kB
Anonymous:           152 kB
7f0000000000-7f0000028000 r-xp 00028000 fe:00 131                        /usr/lib/x86_64-linux-gnu/libc.so.6
Size:                160 kB
Anonymous:             0 kB
7f1000000000-7f1000001000 r--p 00000000 fe:00 99                         /usr/bin/vs (deleted)
Anonymous:             0 kB
`

func TestDroppable(t *testing.T) {
	ms, err := parseSmaps(strings.NewReader(smapsFixture))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 7 {
		t.Fatalf("parsed %d mappings, want 7: %+v", len(ms), ms)
	}
	tests := []struct {
		name string
		path string
		want []Mapping
	}{
		{
			name: "text and read-only data, not the relocated segment nor data",
			path: "/usr/bin/vs",
			want: []Mapping{
				{Start: 0x400000, End: 0x2652000, Perms: "r-xp", Path: "/usr/bin/vs"},
				{Start: 0x2652000, End: 0x4cbd000, Perms: "r--p", Path: "/usr/bin/vs"},
			},
		},
		{name: "another file", path: "/usr/bin/other"},
		{
			name: "a path with a space",
			path: "/usr/bin/vs (deleted)",
			want: []Mapping{{Start: 0x7f1000000000, End: 0x7f1000001000, Perms: "r--p", Path: "/usr/bin/vs (deleted)"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, droppable(ms, tc.path)); diff != "" {
				t.Errorf("droppable (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNotExecutable: what a collection at rest drops of the droppable
// mappings is the read-only data, not the text.
func TestNotExecutable(t *testing.T) {
	ms, err := parseSmaps(strings.NewReader(smapsFixture))
	if err != nil {
		t.Fatal(err)
	}
	want := []Mapping{{Start: 0x2652000, End: 0x4cbd000, Perms: "r--p", Path: "/usr/bin/vs"}}
	if diff := cmp.Diff(want, NotExecutable(droppable(ms, "/usr/bin/vs"))); diff != "" {
		t.Errorf("NotExecutable (-want +got):\n%s", diff)
	}
}

func TestParseSmapsErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{in: "00400000 r-xp 0 fe:00 1 /x\n", want: `smaps line 1: "00400000 r-xp 0 fe:00 1 /x": want START-END`},
		{in: "0040zz00-00500000 r-xp 0 fe:00 1 /x\n", want: `smaps line 1: address range "0040zz00-00500000": want START-END in hex`},
		{in: "00400000-00500000 r-xp 0 fe:00 1 /x\nAnonymous: many kB\n", want: `smaps line 2: Anonymous "many": want kB`},
		{in: "00400000-00500000 r-xp 0 fe:00\n", want: `smaps line 1: "00400000-00500000 r-xp 0 fe:00": want START-END PERMS OFFSET DEV INODE`},
		{in: "00400000-00500000 r-xp 0 fe:00 1 /" + strings.Repeat("x", lineMax) + "\n", want: "smaps line 1: longer than 8192 bytes"},
	} {
		_, err := parseSmaps(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseSmaps(%q) = %v, want an error with %q", tc.in, err, tc.want)
		}
	}
}

// TestParseSmapsLines: lines cut by the buffer's end, a last line without
// its newline and a path with spaces read as whole lines.
func TestParseSmapsLines(t *testing.T) {
	var b strings.Builder
	var want []Mapping
	for i := range 40 {
		start := uintptr(0x400000 + i*0x1000)
		path := "/usr/bin/vs"
		if i%3 == 0 {
			path = "/opt/a dir/vs (deleted)"
		}
		fmt.Fprintf(&b, "%x-%x r--p 00000000 fe:00 12354333                           %s\n", start, start+0x1000, path)
		b.WriteString("Size:                  4 kB\nRss:                   4 kB\nVmFlags: rd mr mw me sd\n")
		fmt.Fprintf(&b, "Anonymous:          %d kB", i)
		if i < 39 {
			b.WriteString("\n")
		}
		want = append(want, Mapping{Start: start, End: start + 0x1000, Perms: "r--p", Path: path, Anonymous: i})
	}
	for _, size := range []int{128, 200, lineMax} {
		var lines []string
		err := scanLines(strings.NewReader(b.String()), make([]byte, size), func(n int, line []byte) error {
			if n != len(lines)+1 {
				t.Errorf("buffer %d: line numbered %d after %d lines", size, n, len(lines))
			}
			lines = append(lines, string(line))
			return nil
		})
		if err != nil {
			t.Fatalf("buffer %d: %v", size, err)
		}
		if diff := cmp.Diff(strings.Split(b.String(), "\n"), lines); diff != "" {
			t.Errorf("buffer %d: lines (-want +got):\n%s", size, diff)
		}
	}
	got, err := parseSmaps(iotest.OneByteReader(strings.NewReader(b.String())))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseSmaps (-want +got):\n%s", diff)
	}
}

// TestParseSmapsAllocations: the small supervisor reads smaps with its
// collector off, so what a read allocates stays; that is the mappings and
// their paths, not a copy of the file nor anything per line.
func TestParseSmapsAllocations(t *testing.T) {
	var b strings.Builder
	const mappings = 30
	for i := range mappings {
		fmt.Fprintf(&b, "%x-%x r-xp 00000000 fe:00 1 /usr/bin/vs\n", 0x400000+i*0x1000, 0x401000+i*0x1000)
		for range 24 {
			b.WriteString("Private_Clean:         0 kB\n")
		}
		b.WriteString("Anonymous:             0 kB\n")
	}
	text := b.String()
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := parseSmaps(strings.NewReader(text)); err != nil {
			t.Fatal(err)
		}
	})
	// The buffer, one path per mapping, the slice's growth.
	if limit := float64(1 + mappings + 8); allocs > limit {
		t.Errorf("parseSmaps of %d mappings (%d bytes) allocated %.0f times, want at most %.0f", mappings, len(text), allocs, limit)
	}
}

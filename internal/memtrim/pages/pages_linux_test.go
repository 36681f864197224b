package pages

import (
	"strings"
	"testing"

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
	ms, err := parseSmaps(smapsFixture)
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
	ms, err := parseSmaps(smapsFixture)
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
	} {
		_, err := parseSmaps(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseSmaps(%q) = %v, want an error with %q", tc.in, err, tc.want)
		}
	}
}

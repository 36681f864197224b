package memtrim

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

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
	if diff := cmp.Diff(want, notExecutable(droppable(ms, "/usr/bin/vs"))); diff != "" {
		t.Errorf("notExecutable (-want +got):\n%s", diff)
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

// exeResident sums the resident kB of this process's read-only mappings
// of its executable.
func exeResident(t *testing.T) int {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	kb, in := 0, false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 6 && strings.Contains(f[0], "-"):
			in = strings.Join(f[5:], " ") == exe && f[1][1] == '-'
		case in && len(f) >= 2 && f[0] == "Rss:":
			n, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			kb += n
		}
	}
	return kb
}

// TestExecutableReleasesPages drops the test binary's own pages: its
// resident set of the executable shrinks, and the process runs on (the
// pages it needs come back from the page cache).
func TestExecutableReleasesPages(t *testing.T) {
	before := exeResident(t)
	n, err := Executable()
	if err != nil {
		t.Fatal(err)
	}
	after := exeResident(t)
	t.Logf("executable resident: %d kB before, %d kB after releasing %d kB of address space", before, after, n/1024)
	if n == 0 {
		t.Fatal("Executable released no mapping of the test binary")
	}
	if after >= before {
		t.Errorf("executable resident after Executable() = %d kB, want less than the %d kB before", after, before)
	}
	// Code and read-only data are read back intact.
	if got := strconv.Itoa(12345); got != "12345" {
		t.Errorf("strconv.Itoa after the release = %q", got)
	}
}

// TestAfterCollections: once trimmed, a collection maps executable pages
// back (the type descriptors and stack maps it reads); AfterCollections
// drops them again right after it.
func TestAfterCollections(t *testing.T) {
	if _, err := Executable(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		runtime.GC()
	}
	kept := exeResident(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := AfterCollections(ctx); err != nil {
		t.Fatal(err)
	}
	var lowest int
	for i := range 10 {
		runtime.GC()
		time.Sleep(20 * time.Millisecond) // the drop runs after the collection
		if kb := exeResident(t); i == 0 || kb < lowest {
			lowest = kb
		}
	}
	t.Logf("executable resident after collections: %d kB without AfterCollections, %d kB with (lowest of 10)", kept, lowest)
	if lowest >= kept {
		t.Errorf("with AfterCollections %d kB stay resident after collections, want fewer than the %d kB without", lowest, kept)
	}
}

package memtrim

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

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

package memtrim

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Mapping is one mapping of /proc/PID/smaps.
type Mapping struct {
	Start, End uintptr
	Perms      string // "r-xp", "r--p", ...
	Path       string
	Anonymous  int // kB of the mapping's pages that are private copies
}

// parseSmaps reads the mappings of a /proc/PID/smaps text.
func parseSmaps(smaps string) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(strings.NewReader(smaps))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if k, v, ok := strings.Cut(f[0], ":"); ok && v == "" {
			if k == "Anonymous" && len(out) > 0 && len(f) > 1 {
				kb, err := strconv.Atoi(f[1])
				if err != nil {
					return nil, fmt.Errorf("smaps line %d: Anonymous %q: want kB", n, f[1])
				}
				out[len(out)-1].Anonymous = kb
			}
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok || len(f) < 5 {
			return nil, fmt.Errorf("smaps line %d: %q: want START-END PERMS OFFSET DEV INODE [PATH]", n, line)
		}
		s, err1 := strconv.ParseUint(lo, 16, 64)
		e, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || e <= s {
			return nil, fmt.Errorf("smaps line %d: address range %q: want START-END in hex", n, f[0])
		}
		m := Mapping{Start: uintptr(s), End: uintptr(e), Perms: f[1]}
		if len(f) > 5 {
			m.Path = strings.Join(f[5:], " ")
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// droppable picks the mappings of path whose pages can be dropped and read
// back from the file unchanged: private, never writable (text, read-only
// data, pclntab), and holding no private copy of a page (a relocated
// read-only segment of a position-independent build has them: dropping
// those would lose the relocations).
func droppable(ms []Mapping, path string) []Mapping {
	var out []Mapping
	for _, m := range ms {
		if m.Path != path || len(m.Perms) != 4 || m.Perms[1] != '-' || m.Perms[3] != 'p' || m.Anonymous != 0 {
			continue
		}
		out = append(out, m)
	}
	return out
}

// Executable drops this process's page-table entries for the read-only
// mappings of its executable (MADV_DONTNEED). The pages stay in the page
// cache; those the process uses again are mapped back on first touch, so
// its resident set becomes what it runs from then on, not everything the
// initialisation of every linked package touched once. It returns the
// bytes of address space released (not all of it was resident).
func Executable() (uintptr, error) {
	ms, err := exeMappings()
	if err != nil {
		return 0, err
	}
	return drop(ms)
}

// exeMappings are the mappings of this process's executable that Executable
// drops.
func exeMappings() ([]Mapping, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return nil, err
	}
	ms, err := parseSmaps(string(b))
	if err != nil {
		return nil, err
	}
	return droppable(ms, exe), nil
}

// drop drops the page-table entries of ms and returns the bytes of address
// space released.
func drop(ms []Mapping) (uintptr, error) {
	var n uintptr
	for _, m := range ms {
		// By address: the range is not Go memory, so no slice stands for it.
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, m.Start, m.End-m.Start, unix.MADV_DONTNEED); e != 0 {
			return n, fmt.Errorf("madvise %x-%x %s %s: %w", m.Start, m.End, m.Perms, m.Path, e)
		}
		n += m.End - m.Start
	}
	return n, nil
}

// AfterStart collects the garbage of the start-up and returns it to the
// kernel at once (debug.FreeOSMemory) rather than after the scavenger's
// minutes, then calls Executable: in that order, so that the pages the
// collection itself touched (type descriptors of the live heap, stack
// maps) go too.
func AfterStart() error {
	debug.FreeOSMemory()
	_, err := Executable()
	return err
}

// AfterCollections drops the executable's pages again, as Executable does,
// right after each collection, until ctx is done. A collection reads, all
// over the executable, the type descriptors of the larger live objects
// and the stack maps of every goroutine's frames, and so maps back pages
// the process does not otherwise use at rest. They stay in the page
// cache: the next collection maps them from there without reading the
// disk. It fails only when the executable's mappings cannot be read.
func AfterCollections(ctx context.Context) error {
	ms, err := exeMappings()
	if err != nil {
		return err
	}
	afterEachGC(ctx, func() { _, _ = drop(ms) })
	return nil
}

// AfterQuietCollections is AfterCollections for a process that serves
// traffic (vipstack lb): after a collection that came at least gap after
// the one before, as collections at rest do, it drops the executable's
// read-only data and pclntab, where the collection read type descriptors
// and stack maps. The text stays mapped: it is what the process runs,
// and its next request would fault it back. While collections follow
// each other under load nothing is dropped: each drop would be paid again
// in page faults on the requests' path. now is the clock the gaps are
// measured with.
func AfterQuietCollections(ctx context.Context, gap time.Duration, now func() time.Time) error {
	ms, err := exeMappings()
	if err != nil {
		return err
	}
	data := notExecutable(ms)
	afterQuietGC(ctx, gap, now, func() { _, _ = drop(data) })
	return nil
}

// notExecutable picks the mappings of ms that hold no code.
func notExecutable(ms []Mapping) []Mapping {
	var out []Mapping
	for _, m := range ms {
		if len(m.Perms) == 4 && m.Perms[2] != 'x' {
			out = append(out, m)
		}
	}
	return out
}

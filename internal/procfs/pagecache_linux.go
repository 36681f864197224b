package procfs

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// EvictPageCache drops a file's clean pages from the page cache, so that a
// program started from it afterwards starts as on a freshly booted node:
// its pages come in through mmap faults. A binary that go build has just
// written sits in the page cache in large folios, which a fault maps
// whole: that adds some 30 MB of file-backed RSS to a Go binary the size
// of CoreDNS, and the file part of every such process's RSS is larger than
// a deployed binary's. Pages mapped by a running process stay.
func EvictPageCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("drop %s from the page cache: %w", path, err)
	}
	return nil
}

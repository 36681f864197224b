package main

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// evictPageCache drops a file's clean pages from the page cache (as
// bench/node does), so the daemons start as on a freshly booted node and
// their executable's pages come in through mmap faults. A binary that go
// build has just written sits in the page cache in large folios, which a
// fault maps whole, and the file part of every process's RSS is then
// larger than a deployed binary's. Pages a running process maps stay.
func evictPageCache(path string) error {
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

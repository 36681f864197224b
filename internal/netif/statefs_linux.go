package netif

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// InMemory reports whether dir is on a file system kept in memory (tmpfs
// or ramfs), where a ledger write never waits for a disk; otherwise it
// names the file system by its magic number.
func InMemory(dir string) (bool, string, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false, "", fmt.Errorf("state directory %s: %w", dir, err)
	}
	switch int64(st.Type) {
	case unix.TMPFS_MAGIC, unix.RAMFS_MAGIC:
		return true, "", nil
	case unix.EXT4_SUPER_MAGIC:
		return false, "ext2/3/4", nil
	case unix.XFS_SUPER_MAGIC:
		return false, "xfs", nil
	case unix.BTRFS_SUPER_MAGIC:
		return false, "btrfs", nil
	case unix.OVERLAYFS_SUPER_MAGIC:
		return false, "overlayfs", nil
	}
	return false, fmt.Sprintf("file system type %#x", st.Type), nil
}

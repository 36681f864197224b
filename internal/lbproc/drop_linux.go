package lbproc

import (
	"fmt"
	"syscall"
)

// Drop switches every thread of the process to ids: the group first
// (supplementary groups cleared, as haproxy does with setgroups), then the
// user, while it still may. Since Go 1.16 these calls act on all threads.
func Drop(ids IDs) error {
	if ids.GID >= 0 {
		if err := syscall.Setgroups([]int{ids.GID}); err != nil {
			return fmt.Errorf("group %d: setgroups: %w", ids.GID, err)
		}
		if err := syscall.Setresgid(ids.GID, ids.GID, ids.GID); err != nil {
			return fmt.Errorf("group %d: setresgid: %w", ids.GID, err)
		}
	}
	if ids.UID >= 0 {
		if err := syscall.Setresuid(ids.UID, ids.UID, ids.UID); err != nil {
			return fmt.Errorf("user %d: setresuid: %w", ids.UID, err)
		}
	}
	return nil
}

package lbproc

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
)

// IDs are the numeric user and group a process switches to; -1 keeps the
// current one.
type IDs struct {
	UID, GID int
}

// LookupIDs resolves haproxy's `user` and `group` values (names or
// numbers; empty keeps the current one). As in haproxy, a user without a
// group keeps the process's group.
func LookupIDs(userName, groupName string) (IDs, error) {
	ids := IDs{UID: -1, GID: -1}
	if userName != "" {
		if n, err := strconv.Atoi(userName); err == nil {
			ids.UID = n
		} else {
			u, err := user.Lookup(userName)
			if err != nil {
				return ids, fmt.Errorf("user %q: no such user on this host (accepted: a name from the passwd database or a number)", userName)
			}
			ids.UID, _ = strconv.Atoi(u.Uid)
		}
	}
	if groupName != "" {
		if n, err := strconv.Atoi(groupName); err == nil {
			ids.GID = n
		} else {
			g, err := user.LookupGroup(groupName)
			if err != nil {
				return ids, fmt.Errorf("group %q: no such group on this host (accepted: a name from the group database or a number)", groupName)
			}
			ids.GID, _ = strconv.Atoi(g.Gid)
		}
	}
	return ids, nil
}

// WritePIDFile writes pid and a newline to path, replacing what was there.
func WritePIDFile(path string, pid int) error {
	if err := os.WriteFile(path, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return fmt.Errorf("pidfile: %w", err)
	}
	return nil
}

// RemovePIDFile removes path when it still holds pid (a newer process
// may have taken it over), or when it can no longer be read after the
// process became another user.
func RemovePIDFile(path string, pid int) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	switch {
	case errors.Is(err, os.ErrPermission):
		// Written as root and unreadable since the process became
		// user: the directory still lets it go.
	case err != nil:
		return fmt.Errorf("pidfile: %w", err)
	case string(b) != strconv.Itoa(pid)+"\n":
		return nil
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("pidfile: %w", err)
	}
	return nil
}

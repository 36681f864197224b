//go:build !linux

package lbproc

import "errors"

// Drop is not supported outside Linux.
func Drop(ids IDs) error {
	if ids.UID < 0 && ids.GID < 0 {
		return nil
	}
	return errors.New("user and group: switching identity is supported on Linux only")
}

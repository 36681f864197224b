//go:build !linux

package lbproc

import (
	"errors"
	"os"
)

// Chroot is not supported outside Linux.
func Chroot(dir string) (*os.Root, error) {
	return nil, errors.New("chroot: supported on Linux only")
}

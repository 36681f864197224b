//go:build !linux

package relay

import "errors"

// RaiseFileLimit is only implemented on Linux.
func RaiseFileLimit() (soft, hard uint64, err error) {
	return 0, 0, errors.New("raising the open file limit is only supported on Linux")
}

// SetFileLimit is only implemented on Linux.
func SetFileLimit(uint64) (soft, hard uint64, err error) {
	return 0, 0, errors.New("setting the open file limit is only implemented on Linux")
}

//go:build !linux

package cpusched

import (
	"errors"
	"time"
)

// MinSlice and MaxSlice bound the slice SetSlice accepts.
const (
	MinSlice = 100 * time.Microsecond
	MaxSlice = 100 * time.Millisecond
)

// ErrUnsupported means this system keeps no slice per thread.
var ErrUnsupported = errors.New("cpusched: a slice per thread is Linux's (6.12 or later)")

// SetSlice returns ErrUnsupported: only Linux has per-thread slices.
func SetSlice(time.Duration) (int, error) { return 0, ErrUnsupported }

// Slice returns ErrUnsupported.
func Slice(int) (time.Duration, error) { return 0, ErrUnsupported }

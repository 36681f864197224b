//go:build !linux

package memtrim

import (
	"context"
	"errors"
	"runtime/debug"
	"time"
)

// Executable is supported on Linux only.
func Executable() (uintptr, error) {
	return 0, errors.New("memtrim: releasing executable pages is supported on Linux only")
}

// AfterStart returns the start-up garbage to the kernel; releasing the
// executable's pages is Linux only.
func AfterStart() error {
	debug.FreeOSMemory()
	return nil
}

// AfterCollections is supported on Linux only.
func AfterCollections(context.Context) error {
	return errors.New("memtrim: releasing executable pages is supported on Linux only")
}

// AfterQuietCollections is supported on Linux only.
func AfterQuietCollections(context.Context, time.Duration, func() time.Time) error {
	return errors.New("memtrim: releasing executable pages is supported on Linux only")
}

// PagesSingly is supported on Linux only.
func PagesSingly() error {
	return errors.New("memtrim: mapping pages back one at a time is supported on Linux only")
}

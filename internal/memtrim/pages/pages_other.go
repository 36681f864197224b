//go:build !linux

package pages

import "errors"

// Mapping is one mapping of /proc/PID/smaps (Linux only).
type Mapping struct {
	Start, End uintptr
	Perms      string
	Path       string
	Anonymous  int
}

var errLinux = errors.New("memtrim: releasing executable pages is supported on Linux only")

// Executable is supported on Linux only.
func Executable() (uintptr, error) { return 0, errLinux }

// Droppable is supported on Linux only.
func Droppable() ([]Mapping, error) { return nil, errLinux }

// Drop is supported on Linux only.
func Drop([]Mapping) (uintptr, error) { return 0, errLinux }

// NotExecutable is supported on Linux only.
func NotExecutable([]Mapping) []Mapping { return nil }

// NoFaultAround is supported on Linux only.
func NoFaultAround([]Mapping) error { return errLinux }

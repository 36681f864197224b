//go:build !linux

package sched

import "errors"

// Apply is Linux only.
func Apply(was, t Tuning) ([]string, error) {
	if t == was {
		return nil, nil
	}
	return nil, errors.New("scheduling settings are Linux only")
}

// Threads is Linux only.
func Threads(prio int) (int, error) {
	if prio == 0 {
		return 0, nil
	}
	return 0, errors.New("realtime priority is Linux only")
}

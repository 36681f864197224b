//go:build !linux

package redirect

import "fmt"

// Sweep is not supported off Linux.
func Sweep() ([]string, error) {
	return nil, fmt.Errorf("redirect: sweep: %w", errUnsupported)
}

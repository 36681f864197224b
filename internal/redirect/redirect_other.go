//go:build !linux

package redirect

import (
	"errors"
	"fmt"
)

var errUnsupported = errors.New("unsupported platform: the API VIP redirect needs Linux nftables")

// Enable is not supported off Linux.
func (r *Redirect) Enable() error {
	return fmt.Errorf("redirect: enable %s: %w", r.Table(), errUnsupported)
}

// Disable is not supported off Linux.
func (r *Redirect) Disable() error {
	return fmt.Errorf("redirect: disable %s: %w", r.Table(), errUnsupported)
}

// Enabled is not supported off Linux.
func (r *Redirect) Enabled() (bool, error) {
	return false, fmt.Errorf("redirect: list %s: %w", r.Table(), errUnsupported)
}

// Renew is not supported off Linux.
func (r *Redirect) Renew() error {
	return fmt.Errorf("redirect: renew %s: %w", r.Table(), errUnsupported)
}

// Live is not supported off Linux.
func (r *Redirect) Live() (bool, error) {
	return false, fmt.Errorf("redirect: list %s: %w", r.Table(), errUnsupported)
}

//go:build !linux

package lbkernel

import (
	"errors"
	"fmt"
	"net/netip"
)

var errUnsupported = errors.New("unsupported platform: the kernel data path needs Linux nftables")

// Table is the kernel path's nftables table; off Linux every method fails.
type Table struct {
	NetNS int
}

// Usable is not supported off Linux.
func (t *Table) Usable() error { return fmt.Errorf("lbkernel: %w", errUnsupported) }

// Remove is not supported off Linux.
func (t *Table) Remove() error { return fmt.Errorf("lbkernel: remove: %w", errUnsupported) }

// Present is not supported off Linux.
func (t *Table) Present() (bool, error) {
	return false, fmt.Errorf("lbkernel: list: %w", errUnsupported)
}

// Install is not supported off Linux.
func (t *Table) Install(*Plan, map[string][]Target) error {
	return fmt.Errorf("lbkernel: install: %w", errUnsupported)
}

// Update is not supported off Linux.
func (t *Table) Update(string, []Target) error {
	return fmt.Errorf("lbkernel: update: %w", errUnsupported)
}

// Connections is not supported off Linux.
func (t *Table) Connections() (map[string]uint64, error) {
	return nil, fmt.Errorf("lbkernel: list: %w", errUnsupported)
}

// Suspects is not supported off Linux.
func (t *Table) Suspects() (map[netip.AddrPort]bool, error) {
	return nil, fmt.Errorf("lbkernel: list: %w", errUnsupported)
}

//go:build !linux

package sched

import (
	"errors"
	"os/exec"
)

// Process is the scheduling of this process: Linux only here.
type Process struct{}

// Start is cmd.Start.
func (p *Process) Start(cmd *exec.Cmd) error { return cmd.Start() }

// Apply refuses anything but the default: the settings are Linux only.
func (p *Process) Apply(t Tuning) ([]string, error) {
	if t == (Tuning{}) {
		return nil, nil
	}
	return nil, errors.New("scheduling settings (vrrp_rt_priority, vrrp_priority, vrrp_no_swap, vrrp_rlimit_rttime) are Linux only")
}

// OffRealtime runs f: no realtime policy is applied here.
func OffRealtime(f func()) { f() }

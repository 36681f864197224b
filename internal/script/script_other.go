//go:build !linux

package script

import (
	"context"
	"errors"
	"time"
)

// errUnsupported is returned on platforms other than Linux.
var errUnsupported = errors.New("script: running scripts is only supported on Linux")

// Check is only implemented on Linux.
func (sec Security) Check(argv []string) error { return errUnsupported }

// Run is only implemented on Linux.
func (r Runner) Run(ctx context.Context, argv []string, timeout time.Duration, env []string) Result {
	return Result{ExitCode: -1, Err: errUnsupported}
}

// Notify is only implemented on Linux.
func (r Runner) Notify(argv []string, extra ...string) error { return errUnsupported }

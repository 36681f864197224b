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

// UnsafeError is the enable_script_security refusal (see the Linux
// implementation).
type UnsafeError struct {
	Script, Path string
	Err          error
}

func (e *UnsafeError) Error() string { return "script " + e.Script + ": " + e.Err.Error() }
func (e *UnsafeError) Unwrap() error { return e.Err }

// Unsafe is only implemented on Linux; elsewhere nothing runs.
func (sec Security) Unsafe(argv []string) *UnsafeError { return nil }

// Run is only implemented on Linux.
func (r Runner) Run(ctx context.Context, argv []string, timeout time.Duration, env []string) Result {
	return Result{ExitCode: -1, Err: errUnsupported}
}

// Notify is only implemented on Linux.
func (r Runner) Notify(argv []string, extra ...string) error { return errUnsupported }

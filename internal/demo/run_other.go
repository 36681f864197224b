//go:build !linux

package demo

import (
	"context"
	"errors"
)

// Run needs Linux: the demo cluster lives in network namespaces.
func Run(ctx context.Context, opts Options) (Result, error) {
	return Result{}, errors.New("demo: needs Linux: it builds its cluster in network namespaces")
}

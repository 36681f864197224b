//go:build !linux

package discovery

import (
	"context"
	"errors"
	"runtime"
)

func (m *MDNS) run(ctx context.Context, cfg mdnsConfig, update func([]Node)) error {
	return errors.New("mdns: discovery over multicast DNS is only implemented on linux, not " + runtime.GOOS)
}

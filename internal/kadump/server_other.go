//go:build !linux

package kadump

import (
	"context"
	"errors"
	"log/slog"
)

// A Server answers keepalived's dump signals; it needs Linux.
type Server struct {
	Dir     string
	PIDFile string
	Dump    func() (Dump, error)
	Log     *slog.Logger
}

// Run reports that the dump signals are Linux only.
func (s *Server) Run(ctx context.Context) error {
	return errors.New("keepalived-exporter compatibility needs Linux (keepalived's dump signals)")
}

//go:build !linux

package kadump

import (
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

// Start reports that the dump signals are Linux only.
func (s *Server) Start() (stop func(), err error) {
	return nil, errors.New("keepalived-exporter compatibility needs Linux (keepalived's dump signals)")
}

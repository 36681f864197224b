//go:build !linux

package httploop

import (
	"context"
	"errors"
	"log/slog"
	"net"

	"github.com/vipstack/vipstack/internal/lb/httpproxy"
)

// Engine is the loop engine, which needs Linux (epoll).
type Engine struct{}

// New fails: the loop engine needs Linux.
func New(httpproxy.Core, httpproxy.Config, *slog.Logger) (*Engine, error) {
	return nil, errors.New("httploop: the loop engine needs Linux (epoll); use --http-engine std")
}

func (*Engine) Set(httpproxy.Config)         {}
func (*Engine) Serve(net.Listener) error     { return errors.New("httploop: needs Linux") }
func (*Engine) Shutdown(ctx context.Context) {}
func (*Engine) Close()                       {}
func (*Engine) StopAccepting()               {}

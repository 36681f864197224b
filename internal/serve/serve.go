// Package serve runs vipstack's small HTTP endpoints: Prometheus metrics
// and JSON status.
package serve

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/netutil"
)

// Server is one listening endpoint.
type Server struct {
	srv  *http.Server
	Addr net.Addr
}

// Metrics serves reg at /metrics on addr.
func Metrics(addr string, reg *prometheus.Registry) (*Server, error) {
	return MetricsFrom(addr, reg)
}

// MetricsFrom serves what g gathers (e.g. several registries) at /metrics.
func MetricsFrom(addr string, g prometheus.Gatherer) (*Server, error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	return start(addr, mux)
}

// JSON serves the value f returns, as indented JSON, at path on addr.
func JSON(addr, path string, f func() any) (*Server, error) {
	mux := http.NewServeMux()
	mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(f())
	})
	return start(addr, mux)
}

// Limits of the status and metrics endpoints: a scraper or a person needs
// a few connections and small headers; anything past these waits (connections)
// or gets 431 Request Header Fields Too Large.
const (
	MaxConns       = 64
	MaxHeaderBytes = 16 << 10
)

func start(addr string, h http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{srv: &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    MaxHeaderBytes,
	}, Addr: ln.Addr()}
	ln = netutil.LimitListener(ln, MaxConns)
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

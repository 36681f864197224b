// Package serve runs vipstack's small HTTP endpoints: Prometheus metrics
// and JSON status.
package serve

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/netutil"
	"golang.org/x/sys/unix"
)

// Server is one listening endpoint.
type Server struct {
	srv  *http.Server
	Addr net.Addr
}

// Option changes how an endpoint listens.
type Option func(*options)

type options struct {
	reusePort bool
	tls       *tls.Config
	served    chan<- struct{}
}

// ReusePort sets SO_REUSEPORT, so that a successor on the node (see package
// handoff) can listen on the same port while its predecessor still does;
// the kernel spreads connections between the two until one closes.
func ReusePort() Option { return func(o *options) { o.reusePort = true } }

// TLS serves HTTPS with cfg (its certificate from GetCertificate or
// Certificates; see package servingcert) instead of plain HTTP.
func TLS(cfg *tls.Config) Option { return func(o *options) { o.tls = cfg } }

// Served has each answered request send on c, without blocking (a send
// that finds c full is dropped): for a daemon that gives its memory back
// after work (package memidle's Options.Work), where a scrape maps the
// code and the pages of a collection back in while allocating too little
// to count as work by itself (a VRRP engine at 1,000 instances held 26
// MiB after two scrapes against 14 at rest).
func Served(c chan<- struct{}) Option { return func(o *options) { o.served = c } }

// Metrics serves reg at /metrics on addr.
func Metrics(addr string, reg prometheus.Gatherer) (*Server, error) {
	return MetricsFrom(addr, reg)
}

// MetricsFrom serves what g gathers (e.g. several registries) at /metrics.
func MetricsFrom(addr string, g prometheus.Gatherer, opts ...Option) (*Server, error) {
	return start(addr, MetricsHandler(g), opts)
}

// Handler serves h on addr.
func Handler(addr string, h http.Handler, opts ...Option) (*Server, error) {
	return start(addr, h, opts)
}

// Unhealthy is a status that can say the process is not live: the
// answer's Unhealthy is why, "" when it is.
type Unhealthy interface{ Unhealthy() string }

// NotLiveHeader carries the reason of a 503 from JSON.
const NotLiveHeader = "Vipstack-Not-Live"

// JSON serves the value f returns, as indented JSON, at path on addr. A
// value that is Unhealthy with a reason is served with 503 Service
// Unavailable instead of 200, the reason in the NotLiveHeader header (on
// one line) and the status in the body: the status is a liveness probe's
// target, and a process whose part no longer works, and only a restart
// mends, fails it.
func JSON(addr, path string, f func() any, opts ...Option) (*Server, error) {
	mux := http.NewServeMux()
	mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		v := f()
		w.Header().Set("Content-Type", "application/json")
		if u, ok := v.(Unhealthy); ok {
			if why := u.Unhealthy(); why != "" {
				w.Header().Set(NotLiveHeader, strings.Join(strings.Fields(why), " "))
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(v)
	})
	return start(addr, mux, opts)
}

// Limits of the status and metrics endpoints: a scraper or a person needs
// a few connections and small headers; anything past these waits (connections)
// or gets 431 Request Header Fields Too Large.
const (
	MaxConns       = 64
	MaxHeaderBytes = 16 << 10
)

func start(addr string, h http.Handler, opts []Option) (*Server, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	var lc net.ListenConfig
	if o.reusePort {
		lc.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, unix.SO_REUSEPORT, 1)
			})
			return errors.Join(err, serr)
		}
	}
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, err
	}
	if o.served != nil {
		h = notifying(h, o.served)
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
	if o.tls != nil {
		s.srv.TLSConfig = o.tls
		go s.srv.ServeTLS(ln, "", "")
		return s, nil
	}
	go s.srv.Serve(ln)
	return s, nil
}

// notifying is h, sending on c after each request it answered.
func notifying(h http.Handler, c chan<- struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		select {
		case c <- struct{}{}:
		default:
		}
	})
}

// Close stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// pprofFlag is --pprof-addr of the commands that serve at rest for long
// and have no other profiling endpoint (vipstack vrrp, ipfailover): what
// their memory is made of at scale (docs/design/memory.md).
type pprofFlag struct{ addr string }

func (p *pprofFlag) add(fs *flag.FlagSet) {
	fs.StringVar(&p.addr, "pprof-addr", "", "address serving Go's profiles under /debug/pprof/ (loopback only, e.g. 127.0.0.1:6060); empty: off")
}

// check reads the flag after the flags were parsed.
func (p *pprofFlag) check(cmd string, stderr io.Writer) bool {
	if p.addr != "" && requireLoopback(p.addr) != nil {
		fmt.Fprintf(stderr, "%s: --pprof-addr %q: want a loopback address, 127.0.0.1:PORT or [::1]:PORT (profiles show what the process holds)\n", cmd, p.addr)
		return false
	}
	return true
}

// serve listens on the flag's address, if any, and serves the profiles
// until ctx ends; false when it cannot listen (it said why on stderr).
func (p *pprofFlag) serve(ctx context.Context, cmd string, log *slog.Logger, stderr io.Writer) bool {
	if p.addr == "" {
		return true
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		fmt.Fprintf(stderr, "%s: --pprof-addr %q: %v\n", cmd, p.addr, err)
		return false
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("profiles endpoint stopped", "addr", p.addr, "err", err)
		}
	}()
	log.Info("serving Go's profiles", "addr", ln.Addr().String())
	return true
}

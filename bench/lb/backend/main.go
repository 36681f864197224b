// Command backend is the HTTP server bench/lb puts behind both load
// balancers: GET / answers with the backend's name and a newline (a small
// body, keep-alive as HTTP/1.1 clients ask), GET /readyz answers "ok" for
// the balancers' `option httpchk GET /readyz HTTP/1.0` health checks.
// Anything else is 404.
//
// It serves plain HTTP: the benchmark measures the balancers, and TLS
// handshakes on a 2-CPU machine would mostly measure the backends and the
// client. The load balancer's own tests cover TLS checks.
//
// Usage: backend -name b1 -addr 127.0.0.1:8081
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"
)

func main() {
	fs := flag.NewFlagSet("backend", flag.ExitOnError)
	name := fs.String("name", "b", "`name` to answer GET / with")
	addr := fs.String("addr", "127.0.0.1:8081", "`address` to listen on")
	_ = fs.Parse(os.Args[1:])

	body := []byte(*name + "\n")
	ok := []byte("ok\n")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", strconv.Itoa(len(ok)))
		_, _ = w.Write(ok)
	})
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintf(os.Stderr, "backend %s: %v\n", *name, err)
		os.Exit(1)
	}
}

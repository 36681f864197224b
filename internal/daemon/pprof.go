package daemon

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"time"
)

// Profiles is --pprof-addr of the commands that serve at rest for long
// and have no other profiling endpoint (vipstack vrrp, ipfailover): what
// their memory is made of at scale (docs/design/memory.md). It serves
// what net/http/pprof serves, under the same paths, from runtime/pprof:
// net/http/pprof initialises after the Kubernetes packages, and the
// engine of `vipstack vrrp` runs before them (internal/vrrpd/early).
type Profiles struct{ Addr string }

// Add adds --pprof-addr to fs.
func (p *Profiles) Add(fs *flag.FlagSet) {
	fs.StringVar(&p.Addr, "pprof-addr", "", "address serving Go's profiles under /debug/pprof/ (loopback only, e.g. 127.0.0.1:6060); empty: off")
}

// Check reads the flag after the flags were parsed.
func (p *Profiles) Check(cmd string, stderr io.Writer) bool {
	if p.Addr != "" && RequireLoopback(p.Addr) != nil {
		fmt.Fprintf(stderr, "%s: --pprof-addr %q: want a loopback address, 127.0.0.1:PORT or [::1]:PORT (profiles show what the process holds)\n", cmd, p.Addr)
		return false
	}
	return true
}

// Serve listens on the flag's address, if any, and serves the profiles
// until ctx ends; false when it cannot listen (it said why on stderr).
func (p *Profiles) Serve(ctx context.Context, cmd string, log *slog.Logger, stderr io.Writer) bool {
	if p.Addr == "" {
		return true
	}
	ln, err := net.Listen("tcp", p.Addr)
	if err != nil {
		fmt.Fprintf(stderr, "%s: --pprof-addr %q: %v\n", cmd, p.Addr, err)
		return false
	}
	srv := &http.Server{Handler: ProfileHandler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("profiles endpoint stopped", "addr", p.Addr, "err", err)
		}
	}()
	log.Info("serving Go's profiles", "addr", ln.Addr().String())
	return true
}

// ProfileHandler serves /debug/pprof/ as net/http/pprof does: the named
// profiles (?debug=N, ?gc=1 for heap), profile (CPU, ?seconds=N), trace,
// cmdline and symbol. Delta profiles (?seconds=N on a named profile) are
// refused: take two and compare them (go tool pprof -base).
func ProfileHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", namedProfile)
	mux.HandleFunc("/debug/pprof/profile", func(w http.ResponseWriter, r *http.Request) {
		timed(w, r, 30, func(w io.Writer) error { return pprof.StartCPUProfile(w) }, pprof.StopCPUProfile)
	})
	mux.HandleFunc("/debug/pprof/trace", func(w http.ResponseWriter, r *http.Request) {
		timed(w, r, 1, trace.Start, trace.Stop)
	})
	mux.HandleFunc("/debug/pprof/cmdline", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, strings.Join(os.Args, "\x00"))
	})
	mux.HandleFunc("/debug/pprof/symbol", symbol)
	return mux
}

// namedProfile serves a runtime/pprof profile by name, or the index.
func namedProfile(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/debug/pprof/")
	if name == "" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		for _, p := range pprof.Profiles() {
			fmt.Fprintf(w, "%d\t%s\n", p.Count(), p.Name())
		}
		fmt.Fprint(w, "-\tprofile (CPU, ?seconds=30)\n-\ttrace (?seconds=1)\n-\tcmdline\n-\tsymbol\n")
		return
	}
	p := pprof.Lookup(name)
	if p == nil {
		http.Error(w, fmt.Sprintf("unknown profile %q: see /debug/pprof/ for those served", name), http.StatusNotFound)
		return
	}
	if r.FormValue("seconds") != "" {
		http.Error(w, "?seconds on a named profile (a delta) is not served here: take two profiles and compare them with go tool pprof -base", http.StatusBadRequest)
		return
	}
	debug, err := intParam(r, "debug", 0)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if gc, _ := intParam(r, "gc", 0); gc > 0 && name == "heap" {
		runtime.GC()
	}
	if debug == 0 {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name))
	} else {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	_ = p.WriteTo(w, debug)
}

// timed runs start for ?seconds (def when absent), or until the client
// goes, then stop.
func timed(w http.ResponseWriter, r *http.Request, def int, start func(io.Writer) error, stop func()) {
	sec, err := intParam(r, "seconds", def)
	if err != nil || sec <= 0 {
		http.Error(w, fmt.Sprintf("seconds %q: want a whole number of seconds over 0", r.FormValue("seconds")), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if err := start(w); err != nil {
		http.Error(w, "could not start: "+err.Error(), http.StatusInternalServerError)
		return
	}
	t := time.NewTimer(time.Duration(sec) * time.Second)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
	stop()
}

// intParam is the query's integer name, def when absent.
func intParam(r *http.Request, name string, def int) (int, error) {
	v := r.FormValue(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s %q: want an integer", name, v)
	}
	return n, nil
}

// symbol answers pprof's symbol lookups: the addresses (0x..., joined by
// +) in the query or the POST body, each with its function's name.
func symbol(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, "num_symbols: 1\n")
	var in string
	if r.Method == http.MethodPost {
		b, err := bufio.NewReader(io.LimitReader(r.Body, 1<<20)).ReadString(0)
		if err != nil && !errors.Is(err, io.EOF) {
			return
		}
		in = b
	} else {
		in = r.URL.RawQuery
	}
	for _, word := range strings.Split(in, "+") {
		pc, err := strconv.ParseUint(strings.TrimSpace(word), 0, 64)
		if err != nil || pc == 0 {
			continue
		}
		if f := runtime.FuncForPC(uintptr(pc)); f != nil {
			fmt.Fprintf(w, "%#x %s\n", pc, f.Name())
		}
	}
}

package web

import (
	"net/http"
	"strconv"
)

// ServeStats answers r from the stats page when r is for it, as a mode
// http frontend or backend with `stats enable` does (internal/lb/httpproxy
// calls it); false leaves r to the caller, which forwards it.
func (s *Site) ServeStats(w http.ResponseWriter, r *http.Request) bool {
	if s.Stats == nil {
		return false
	}
	return s.serveHTTP(w, r, s.serveStats)
}

// ServeMonitor answers r as a monitor section does when r is for its
// URI (`monitor-uri` in a mode http frontend); false leaves r to the
// caller.
func (s *Site) ServeMonitor(w http.ResponseWriter, r *http.Request) bool {
	if s.Monitor == nil {
		return false
	}
	return s.serveHTTP(w, r, s.serveMonitor)
}

// ServePrometheus answers r with the figures in haproxy's Prometheus
// exporter's format, as a stats listen's exporter does: the answer of
// `http-request use-service prometheus-exporter` in a mode http frontend
// or backend. It needs only s.Core.
func (s *Site) ServePrometheus(w http.ResponseWriter, r *http.Request) {
	s.serveHTTP(w, r, func(*request) *response { return s.servePrometheus() })
}

func (s *Site) serveHTTP(w http.ResponseWriter, r *http.Request, serve func(*request) *response) bool {
	req := &request{method: r.Method, uri: r.RequestURI, major: r.ProtoMajor, minor: r.ProtoMinor, contentLength: r.ContentLength}
	if r.Host != "" {
		req.header = append(req.header, field{"host", r.Host})
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			req.header = append(req.header, field{k, v})
		}
	}
	resp := serve(req)
	if resp.backend {
		return false
	}
	h := w.Header()
	for _, f := range resp.header {
		h.Add(f.Name, f.Value)
	}
	if !resp.noLength && !resp.chunked && h.Get("content-length") == "" {
		h.Set("content-length", strconv.Itoa(len(resp.body)))
	}
	if resp.close {
		h.Set("connection", "close")
	}
	w.WriteHeader(resp.code)
	if r.Method != http.MethodHead {
		w.Write(resp.body)
	}
	return true
}

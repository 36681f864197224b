package serve

import (
	"compress/gzip"
	"io"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
)

// MetricsHandler is what MetricsFrom serves: g at /metrics, for a caller
// that wraps it (with authentication, see package kubeauth) before
// serving it with Handler.
func MetricsHandler(g prometheus.Gatherer) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", metricsHandler(g))
	return mux
}

// textWriter is a Gatherer that writes its families in the text format
// itself (metrics.Registry): a scrape of a VRRP engine's 18,000 series
// through promhttp allocated 22 MB.
type textWriter interface {
	WriteText(w io.Writer) error
}

// metricsHandler serves g: in the text format (0.0.4) when g writes it
// itself, whatever format the scraper prefers (Prometheus takes it; the
// client's Accept header lists it last), gzipped when the client accepts
// gzip; otherwise through promhttp.
func metricsHandler(g prometheus.Gatherer) http.Handler {
	tw, ok := g.(textWriter)
	if !ok {
		return promhttp.HandlerFor(g, promhttp.HandlerOpts{})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := &lazyWriter{w: w, gzip: acceptsGzip(r.Header.Get("Accept-Encoding"))}
		if err := tw.WriteText(out); err != nil && !out.started {
			http.Error(w, "An error has occurred while serving metrics:\n\n"+err.Error(), http.StatusInternalServerError)
			return
		}
		out.close()
	})
}

// lazyWriter sets the headers on the first write, so that an error before
// it can still be answered with a status of 500.
type lazyWriter struct {
	w       http.ResponseWriter
	gzip    bool
	gz      *gzip.Writer
	started bool
}

func (l *lazyWriter) Write(p []byte) (int, error) {
	if !l.started {
		l.started = true
		h := l.w.Header()
		h.Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
		if l.gzip {
			h.Set("Content-Encoding", "gzip")
			h.Add("Vary", "Accept-Encoding")
			l.gz = gzip.NewWriter(l.w)
		}
	}
	if l.gz != nil {
		return l.gz.Write(p)
	}
	return l.w.Write(p)
}

func (l *lazyWriter) close() {
	if !l.started {
		l.Write(nil) // the headers of an empty answer
	}
	if l.gz != nil {
		l.gz.Close()
	}
}

// acceptsGzip reports whether an Accept-Encoding header value lists gzip
// with a weight above zero.
func acceptsGzip(header string) bool {
	for part := range strings.SplitSeq(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q, found := strings.CutPrefix(strings.TrimSpace(params), "q=")
		return !found || strings.Trim(q, "0.") != ""
	}
	return false
}

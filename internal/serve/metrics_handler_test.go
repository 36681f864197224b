package serve

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/metrics"
)

type failing struct{}

func (failing) Describe(chan<- *prometheus.Desc) {}
func (failing) Collect(ch chan<- prometheus.Metric) {
	err := errors.New("the collector broke")
	ch <- prometheus.NewInvalidMetric(prometheus.NewInvalidDesc(err), err)
}

// TestMetricsText: a registry that writes its own text is served as text
// (0.0.4), gzipped when the client accepts gzip and plain when it does
// not, the same families either way; a gather error is a 500 naming it.
func TestMetricsText(t *testing.T) {
	reg := &metrics.Registry{Registry: prometheus.NewRegistry()}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "t_up", Help: "Up."})
	g.Set(3)
	reg.MustRegister(g)
	var want bytes.Buffer
	if err := reg.WriteText(&want); err != nil {
		t.Fatal(err)
	}
	h := MetricsHandler(reg)
	for _, tc := range []struct {
		accept string
		gzip   bool
	}{{"", false}, {"gzip", true}, {"deflate, gzip;q=0.5", true}, {"gzip;q=0", false}, {"identity", false}} {
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Header.Set("Accept-Encoding", tc.accept)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		res := rec.Result()
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
			t.Errorf("Accept-Encoding %q: %d %q, want 200 and text 0.0.4", tc.accept, res.StatusCode, res.Header.Get("Content-Type"))
		}
		body := io.Reader(res.Body)
		if gz := res.Header.Get("Content-Encoding") == "gzip"; gz != tc.gzip {
			t.Errorf("Accept-Encoding %q: gzipped %t, want %t", tc.accept, gz, tc.gzip)
		} else if gz {
			zr, err := gzip.NewReader(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			body = zr
		}
		got, err := io.ReadAll(body)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want.String() {
			t.Errorf("Accept-Encoding %q: body %q, want %q", tc.accept, got, want.String())
		}
	}

	reg.MustRegister(failing{})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "the collector broke") {
		t.Errorf("a failing collector: %d %q, want 500 naming its error", rec.Code, rec.Body.String())
	}
}

package healthcheck

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestHTTPExpectBody checks http-check expect [!] string|rstring's
// outcomes, as haproxy 2.6.12 gave them for the same answers
// (TestCheckDialectsMatchHaproxy compares them on the wire).
func TestHTTPExpectBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.Write([]byte("status: ready\n"))
		case "/bad":
			w.Write([]byte("status: broken\n"))
		case "/unavailable":
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("status: ready\n"))
		case "/empty":
		}
	}))
	defer srv.Close()
	addr := addrOf(t, srv.Listener.Addr())
	str := func(s string, not bool) *BodyMatch { return &BodyMatch{Text: s, Not: not} }
	re := func(s string, not bool) *BodyMatch { return &BodyMatch{Text: s, Re: regexp.MustCompile(s), Not: not} }
	noMatch := Result{Status: L7RSP, Info: "HTTP content check did not match"}
	unwanted := Result{Status: L7RSP, Info: "HTTP check matched unwanted content"}
	noBody := Result{Status: L7RSP, Info: "HTTP content check could not find a response body"}
	tests := []struct {
		name  string
		uri   string
		match *BodyMatch
		want  Result
	}{
		{"string found", "/ok", str("ready", false), Result{OK: true, Status: L7OK, Code: 200}},
		{"string found, whatever the status", "/unavailable", str("ready", false), Result{OK: true, Status: L7OK, Code: 503}},
		{"string not found", "/bad", str("ready", false), noMatch},
		{"unwanted string found", "/bad", str("broken", true), unwanted},
		{"unwanted string not found", "/ok", str("broken", true), Result{OK: true, Status: L7OK, Code: 200}},
		{"rstring matches", "/ok", re(`^status: r`, false), Result{OK: true, Status: L7OK, Code: 200}},
		{"rstring does not match", "/bad", re(`^status: r`, false), noMatch},
		{"empty body", "/empty", str("ready", false), noBody},
		{"empty body, negated", "/empty", re("broken", true), noBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			got := HTTP{Addr: addr, Method: "GET", URI: tt.uri, ExpectBody: tt.match}.Probe(ctx)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Probe (-want +got):\n%s", diff)
			}
		})
	}
}

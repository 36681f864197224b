package daemon

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// TestProfileHandler: the paths net/http/pprof serves, from runtime/pprof.
func TestProfileHandler(t *testing.T) {
	srv := httptest.NewServer(ProfileHandler())
	defer srv.Close()
	pc := reflect.ValueOf(TestProfileHandler).Pointer()
	for _, tc := range []struct {
		name, path string
		wantCode   int
		want       func(body []byte) bool
		wantText   string
	}{
		{name: "index", path: "/debug/pprof/", wantCode: 200, want: func(b []byte) bool {
			return bytes.Contains(b, []byte("\theap\n")) && bytes.Contains(b, []byte("\tgoroutine\n"))
		},
			wantText: "the profiles, with heap and goroutine"},
		{name: "heap, binary", path: "/debug/pprof/heap?gc=1", wantCode: 200, want: func(b []byte) bool { return bytes.HasPrefix(b, []byte{0x1f, 0x8b}) },
			wantText: "a gzipped protocol buffer"},
		{name: "goroutines, text", path: "/debug/pprof/goroutine?debug=1", wantCode: 200, want: func(b []byte) bool { return bytes.HasPrefix(b, []byte("goroutine profile: total")) },
			wantText: "the text form"},
		{name: "CPU, one second", path: "/debug/pprof/profile?seconds=1", wantCode: 200, want: func(b []byte) bool { return bytes.HasPrefix(b, []byte{0x1f, 0x8b}) },
			wantText: "a gzipped protocol buffer"},
		{name: "cmdline", path: "/debug/pprof/cmdline", wantCode: 200, want: func(b []byte) bool { return strings.HasSuffix(strings.SplitN(string(b), "\x00", 2)[0], ".test") },
			wantText: "the test binary first"},
		{name: "symbol", path: fmt.Sprintf("/debug/pprof/symbol?%#x", pc), wantCode: 200, want: func(b []byte) bool { return bytes.Contains(b, []byte(runtime.FuncForPC(pc).Name())) },
			wantText: "this test's name"},
		{name: "unknown profile", path: "/debug/pprof/nope", wantCode: 404, want: func(b []byte) bool { return bytes.Contains(b, []byte(`"nope"`)) }, wantText: "the name refused"},
		{name: "delta refused", path: "/debug/pprof/heap?seconds=5", wantCode: 400, want: func(b []byte) bool { return bytes.Contains(b, []byte("-base")) }, wantText: "what to do instead"},
		{name: "bad seconds", path: "/debug/pprof/profile?seconds=x", wantCode: 400, want: func(b []byte) bool { return bytes.Contains(b, []byte(`"x"`)) }, wantText: "the bad value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Get(srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.wantCode || !tc.want(body) {
				t.Errorf("GET %s: %d, want %d with %s; body %.200q", tc.path, resp.StatusCode, tc.wantCode, tc.wantText, body)
			}
		})
	}
}

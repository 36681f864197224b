package httpproxy

import (
	"net/http"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReplaceWhole(t *testing.T) {
	tests := []struct {
		re, s, with, want string
		ok                bool
	}{
		{re: "curl", s: "curl/7.47.0", with: "foo", want: "foo", ok: true},
		{re: `foo=([^;]*);(.*)`, s: "foo=foobar; expires=x", with: `foo=\1;ip=1;\2`, want: "foo=foobar;ip=1; expires=x", ok: true},
		{re: "/foo/(.*)", s: "/a/foo/b", with: `/\1`, want: "/b", ok: true},
		{re: "x", s: "abc", with: "y", want: "abc"},
		{re: "(a)|(b)", s: "b", with: `[\1][\2]`, want: "[][b]", ok: true},
		{re: "a", s: "a", with: `\x41\\\z\9`, want: `A\z`, ok: true},
		{re: "a", s: "a", with: `end\`, want: `end\`, ok: true},
	}
	for _, tt := range tests {
		got, ok := replaceWhole(regexp.MustCompile(tt.re), tt.s, tt.with)
		if got != tt.want || ok != tt.ok {
			t.Errorf("replaceWhole(%q, %q, %q) = %q, %v; want %q, %v", tt.re, tt.s, tt.with, got, ok, tt.want, tt.ok)
		}
	}
}

func TestReplaceHeader(t *testing.T) {
	h := http.Header{"X-V": {"a1, b2 ,a3", "a4"}, "X-L": {"v1, v2", "w"}}
	replaceHeader(h, "x-v", regexp.MustCompile("^a(.*)"), `c\1`, true)
	replaceHeader(h, "X-L", regexp.MustCompile("^v"), "z", false)
	replaceHeader(h, "X-None", regexp.MustCompile("."), "z", false)
	want := http.Header{"X-V": {"c1, b2 ,c3", "c4"}, "X-L": {"z", "w"}}
	if diff := cmp.Diff(want, h); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
}

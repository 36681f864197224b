package lbconfig

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRegsub applies regsub as haproxy 2.6's sample_conv_regsub does:
// the first match or (g) every one, searches going on after the last
// match with ^ no longer matching, an empty match copying the character
// it stands before, and one more search on the empty rest after a match
// that ends the sample. internal/lb's TestRegsubMatchesHaproxy checks
// the same forms against haproxy itself.
func TestRegsub(t *testing.T) {
	tests := []struct {
		expr, in, want string
	}{
		{expr: "path,regsub(^/api/,/)", in: "/api/v1/x", want: "/v1/x"},
		{expr: "path,regsub(^/api/,/)", in: "/web/api/", want: "/web/api/"},
		{expr: "path,regsub(/,_)", in: "/a/b/", want: "_a/b/"},
		{expr: "path,regsub(/,_,g)", in: "/a/b/", want: "_a_b_"},
		{expr: "path,regsub(^/,_,g)", in: "//a", want: "_/a"},
		{expr: "path,regsub([0-9]+,N,g)", in: "/a12/b3/c", want: "/aN/bN/c"},
		{expr: "path,regsub(AB,-,gi)", in: "abxAbxaB", want: "-x-x-"},
		{expr: "path,regsub(AB,-,g)", in: "abxAB", want: "abx-"},
		{expr: `path,regsub("^/(u)ser/([a-z]+)",/\2/\1)`, in: "/user/bob/x", want: "/bob/u/x"},
		{expr: `path,regsub("a(x)?b",[\1])`, in: "ab", want: "[]"},
		{expr: `path,regsub(a,\x41)`, in: "bab", want: "bAb"},
		{expr: "path,regsub(b*,-,g)", in: "abc", want: "-a--c-"},
		{expr: "path,regsub(a*,-,g)", in: "aaa", want: "--"},
		{expr: "path,regsub(x*,-)", in: "abc", want: "-abc"},
		{expr: "path,regsub(^$,empty)", in: "", want: "empty"},
		{expr: "path,regsub(a,b),regsub(b,c,g)", in: "ab", want: "cc"},
		{expr: `path,regsub('a,b',"(,)")`, in: "xa,by", want: "x(,)y"},
		{expr: `path,regsub(\.,_,g)`, in: "a.b.c", want: "a_b_c"},
	}
	for _, tt := range tests {
		e, err := ParseSampleExpr(tt.expr)
		if err != nil {
			t.Errorf("%s: %v", tt.expr, err)
			continue
		}
		if got := e.Convert(tt.in); got != tt.want {
			t.Errorf("%s on %q = %q, want %q", tt.expr, tt.in, got, tt.want)
		}
	}
}

// TestParseSampleExpr reads fetches, converters and their arguments,
// and refuses what haproxy refuses, in its words.
func TestParseSampleExpr(t *testing.T) {
	tests := []struct {
		expr      string
		wantFetch string
		wantArgs  [][]string
		wantErr   string
	}{
		{expr: "path", wantFetch: "path"},
		{expr: "req.hdr(host),regsub(^www\\.,,i)", wantFetch: "req.hdr(host)", wantArgs: [][]string{{`^www\.`, "", "i"}}},
		{expr: `path,regsub("[)]",'"')`, wantFetch: "path", wantArgs: [][]string{{"[)]", `"`}}},
		{expr: "path,lower", wantErr: "converter 'lower' is not supported by vipstack (accepted: regsub(REGEX,SUBST[,FLAGS]))"},
		{expr: "path,regsub", wantErr: "invalid arg 2 in converter 'regsub' : missing arguments (got 1/2), type 'string' expected"},
		{expr: "path,regsub(a,b,g,x)", wantErr: "invalid arg 3 in converter 'regsub' : expected ')' before ',x)'"},
		{expr: "path,regsub(a)", wantErr: "invalid arg 2 in converter 'regsub' : missing arguments (got 1/2), type 'string' expected"},
		{expr: "path,regsub(a,b,x)", wantErr: "invalid args in converter 'regsub' : invalid regex flag 'x', only 'i' and 'g' are supported"},
		{expr: "path,regsub(a,b", wantErr: "invalid arg 2 in converter 'regsub' : expected ')'"},
		{expr: "path,", wantErr: `sample expression "path,": missing converter after ','`},
		{expr: "path,regsub(a,b) x", wantErr: `sample expression "path,regsub(a,b) x": unexpected " x" after it`},
	}
	for _, tt := range tests {
		e, err := ParseSampleExpr(tt.expr)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("%s: error %v, want %s", tt.expr, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.expr, err)
			continue
		}
		var args [][]string
		for _, c := range e.Convs {
			args = append(args, c.Args)
		}
		if e.Fetch != tt.wantFetch || !cmp.Equal(args, tt.wantArgs) {
			t.Errorf("%s: fetch %q args %q, want %q %q", tt.expr, e.Fetch, args, tt.wantFetch, tt.wantArgs)
		}
	}
}

// TestNextSample finds %[...] in a value, a bracket inside a
// converter's arguments included.
func TestNextSample(t *testing.T) {
	tests := []struct {
		v, lit, expr, rest string
		found              bool
		wantErr            bool
	}{
		{v: "plain", lit: "plain"},
		{v: "a%[src]b", lit: "a", expr: "src", rest: "b", found: true},
		{v: "%[path,regsub([0-9]+,N,g)]/x", expr: "path,regsub([0-9]+,N,g)", rest: "/x", found: true},
		{v: "%[src", wantErr: true},
		{v: "%[src x]", wantErr: true},
	}
	for _, tt := range tests {
		lit, expr, rest, found, err := NextSample(tt.v)
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: error %v", tt.v, err)
			continue
		}
		if err == nil && (lit != tt.lit || expr != tt.expr || rest != tt.rest || found != tt.found) {
			t.Errorf("%q: %q %q %q %v, want %q %q %q %v", tt.v, lit, expr, rest, found, tt.lit, tt.expr, tt.rest, tt.found)
		}
	}
}

// FuzzSampleExpr: reading and applying any expression neither panics
// nor loops.
func FuzzSampleExpr(f *testing.F) {
	for _, s := range []string{"path,regsub(^/api/,/)", "path,regsub(b*,-,g)", `path,regsub("a,b",'\1',gi)`, "x,regsub(", "%[a"} {
		f.Add(s, "/api/b")
	}
	f.Fuzz(func(t *testing.T, expr, in string) {
		if e, err := ParseSampleExpr(expr); err == nil {
			e.Convert(in)
		}
		NextSample(expr)
	})
}

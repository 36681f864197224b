package lbconfig

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzParseYAML checks that ParseYAML never panics, returns exactly one of
// a config and an error, and that an accepted config survives a trip
// through FormatYAML unchanged.
func FuzzParseYAML(f *testing.F) {
	f.Add([]byte(example))
	f.Add([]byte("frontends: [{name: a, binds: [{addr: \"localhost:1\"}], backend: b}]\nbackends: [{name: b, servers: [{name: s, addr: \"[::1]:2\", weight: 3}]}]\n"))
	f.Add([]byte("retries: 0\ntimeouts: {connect: 1h1m1s}\n---\n"))
	// Connection logs: a format with every kind of item, a bad variable,
	// a sample expression, a lone percent.
	f.Add([]byte("frontends: [{name: a, binds: [{addr: \":1\"}], backend: b, log: {format: \"%ci:%cp [%t] %{+Q}ft %b/%s %Tw/%Tc/%Tt %B %U %ts %%\", dontLogNull: true}}]\nbackends: [{name: b, servers: [{name: s, addr: \"[::1]:2\"}]}]\n"))
	f.Add([]byte("frontends: [{name: a, binds: [{addr: \":1\"}], backend: b, log: {format: \"%[src] %{-Q,+X}ci %zz %\"}}]\nbackends: [{name: b}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseYAML("fuzz.yaml", data)
		if (c == nil) == (err == nil) {
			t.Fatalf("ParseYAML returned config %v and error %v; want exactly one", c != nil, err)
		}
		if err != nil {
			return
		}
		y, err := FormatYAML(c)
		if err != nil {
			t.Fatalf("FormatYAML: %v", err)
		}
		again, err := ParseYAML("fuzz.yaml", y)
		if err != nil {
			t.Fatalf("the formatted form of an accepted config is rejected: %v\n%s", err, y)
		}
		if diff := cmp.Diff(c, again, cmpAddr, cmpopts.IgnoreFields(Config{}, "Source", "Warnings")); diff != "" {
			t.Fatalf("round trip mismatch (-first +second):\n%s", diff)
		}
	})
}

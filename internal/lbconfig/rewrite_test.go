package lbconfig

import (
	"strings"
	"testing"
)

// TestValidateHTTPRewrites: Validate compiles the replace- rules and
// refuses a bad regex, a bad value expression and an unknown
// compression algorithm in a model built without the parser.
func TestValidateHTTPRewrites(t *testing.T) {
	tests := []struct {
		name string
		edit func(h *HTTPProxy)
		want string // "" valid
	}{
		{name: "rules", edit: func(h *HTTPProxy) {
			h.Rules = []HTTPRule{{Action: "replace-path", Match: "/a/(.*)", Value: `/\1`}}
			h.ResponseRules = []HTTPRule{{Action: "replace-value", Name: "X", Match: "^a", Value: "b"}, {Action: "set-status", Status: 201}}
			h.Compression = &Compression{Algos: []string{"gzip"}, Types: []string{"text/"}}
		}},
		{name: "bad regex", edit: func(h *HTTPProxy) {
			h.ResponseRules = []HTTPRule{{Action: "replace-header", Name: "X", Match: "(", Value: "b", At: "f:3"}}
		}, want: `f:3: frontend main: http-response replace-header: regex "(": error parsing regexp: missing closing ): ` + "`(`" + ` (accepted: an RE2 regular expression)`},
		{name: "bad value", edit: func(h *HTTPProxy) {
			h.Rules = []HTTPRule{{Action: "replace-uri", Match: "x", Value: "%[rand]", At: "f:4"}}
		}, want: `f:4: frontend main: http-request replace-uri: %[rand] is not supported by vipstack`},
		{name: "bad algorithm", edit: func(h *HTTPProxy) {
			h.Compression = &Compression{Algos: []string{"br"}}
		}, want: `compression algo "br" is not supported by vipstack (accepted: gzip, deflate, raw-deflate)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			c.Monitors, c.Stats = nil, nil
			c.Backends[0].HTTP = &HTTPBackend{}
			c.Frontends[0].HTTP = &HTTPFrontend{}
			tt.edit(&c.Frontends[0].HTTP.HTTPProxy)
			err := Validate(c)
			switch {
			case tt.want == "" && err != nil:
				t.Fatal(err)
			case tt.want == "":
				if r := c.Frontends[0].HTTP.Rules; len(r) > 0 && r[0].Re == nil {
					t.Error("Validate left the rule's regex uncompiled")
				}
			case err == nil || !strings.Contains(err.Error(), tt.want):
				t.Errorf("error %v, want it to contain %s", err, tt.want)
			}
		})
	}
}

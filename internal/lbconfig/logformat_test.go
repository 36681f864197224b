package lbconfig

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseLogFormatGlobalAndSeparators: "%{+Q}o" quotes the variables
// after it unless they say -Q, emits nothing itself, and runs of spaces
// write one, none at the start (haproxy's separators;
// internal/lb TestLogFormatGlobalQuoteMatchesHaproxy).
func TestParseLogFormatGlobalAndSeparators(t *testing.T) {
	tests := []struct {
		in   string
		want []LogItem
	}{
		{"%{+Q}o %ci  =  %{-Q}b", []LogItem{{Var: "ci", Quote: true}, {Lit: " = "}, {Var: "b"}}},
		{"  a   b", []LogItem{{Lit: "a b"}}},
		{"%o%ci", []LogItem{{Var: "ci"}}},
		{"%{+Q}o%{+Q}o%f %{-Q}o%f", []LogItem{{Var: "f", Quote: true}, {Lit: " "}, {Var: "f"}}},
	}
	for _, tt := range tests {
		got, err := ParseLogFormat(tt.in)
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tt.in, diff)
		}
	}
}

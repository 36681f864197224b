package main

import (
	"strings"
	"testing"
)

// TestRunRejectsOpenLoopFlags: bad -paced-rate and -paced-fraction values
// stop the run before anything starts, saying what is accepted.
func TestRunRejectsOpenLoopFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{args: []string{"-paced-rate", "fast"}, want: `"fast": want auto, 0 (no open loop) or 1..100000 requests a second`},
		{args: []string{"-paced-rate", "200000"}, want: "want auto, 0 (no open loop) or 1..100000"},
		{args: []string{"-paced-fraction", "1.5"}, want: "-paced-fraction 1.5: want 0.05..1"},
		{args: []string{"-paced-fraction", "0"}, want: "-paced-fraction 0: want 0.05..1"},
	} {
		var out, errs strings.Builder
		if code := run(tt.args, &out, &errs); code != 2 || !strings.Contains(errs.String(), tt.want) {
			t.Errorf("run(%q) = %d, %q; want 2 and %q", tt.args, code, errs.String(), tt.want)
		}
	}
}

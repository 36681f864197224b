package supervise

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSpecRoundTrip: what ExecSupervisor encodes in EnvSupervisor, the
// supervisor decodes unchanged, whatever the strings hold.
func TestSpecRoundTrip(t *testing.T) {
	for _, spec := range []Spec{
		{LogFormat: "text", LogLevel: "info"},
		{LogFormat: "json", LogLevel: "debug", LogAttrs: []string{"node", "m0", "pool", "ipf-ha"}},
		{LogFormat: "text", LogLevel: "warn+1", LogAttrs: []string{"a key", `with "quotes" = and \ back`, "nl", "a\nb\x00c", "", "é ✓"}, KeepFD: 7},
		{LogFormat: "text", LogLevel: "error", KeepFD: 3, gcEnv: true},
		{LogFormat: "json", LogLevel: "info", procsEnv: true},
		{LogFormat: "json", LogLevel: "info", gcEnv: true, procsEnv: true},
		{LogFormat: "", LogLevel: ""},
	} {
		b, err := spec.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var got Spec
		if err := got.UnmarshalText(b); err != nil {
			t.Fatalf("UnmarshalText(%q): %v", b, err)
		}
		if diff := cmp.Diff(spec, got, cmp.AllowUnexported(Spec{})); diff != "" {
			t.Errorf("round trip of %q (-want +got):\n%s", b, diff)
		}
	}
}

// TestSpecBadValue: a value the supervisor cannot read is refused with
// what is wrong and what is accepted.
func TestSpecBadValue(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{in: `{"logFormat":"text","logLevel":"info"}`, want: `: want name=value`}, // the JSON of before
		{in: `format=text level="info"`, want: `field format: value "text level=\"info\"": want a Go-quoted string`},
		{in: `format="text`, want: `field format: value "\"text": want a Go-quoted string`},
		{in: `format="text"level="info"`, want: `field format: "level=\"info\"" after its value: want a space, then the next field`},
		{in: `format="text" colour="red"`, want: `field "colour": want format, level, attr, keepfd, gcenv or procsenv`},
		{in: `format="text" keepfd=three`, want: `field keepfd: value "three": want a descriptor number`},
		{in: `format="text" keepfd=-1`, want: `field keepfd: value "-1": want a descriptor number`},
		{in: `format="text" gcenv=maybe`, want: `field gcenv: value "maybe": want true or false`},
		{in: `format="text" procsenv=1x`, want: `field procsenv: value "1x": want true or false`},
		{in: `format="text" `, want: `a space at the end`},
		{in: `format`, want: `field "format": want name=value`},
	} {
		var s Spec
		err := s.UnmarshalText([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("UnmarshalText(%q) error = %v, want %q", tc.in, err, tc.want)
		}
	}
}

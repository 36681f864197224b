package supervise

import (
	"os"
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
		{LogFormat: "text", LogLevel: "info", LogAttrs: []string{"node", "m0"}, Ledgers: []string{"/run/vipstack/vrrp-net-4026531840.vips", "/tmp/a dir/\"bgp\".vips"}, Redirects: true, gcEnv: true},
		{LogFormat: "json", LogLevel: "info", Ledgers: []string{"/run/vipstack/vrrp-net.vips"}, KeepFD: 5},
		{LogFormat: "text", LogLevel: "info", Ledgers: []string{"/run/vipstack/vrrp-net.vips"}, StartGC: 5, gcEnv: true, procsEnv: true},
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
		{in: `format="text" colour="red"`, want: `field "colour": want format, level, attr, keepfd, ledger, redirects, startgc, gcenv or procsenv`},
		{in: `format="text" ledger=/run/vipstack/x.vips`, want: `field ledger: value "/run/vipstack/x.vips": want a Go-quoted string`},
		{in: `format="text" redirects=yes`, want: `field redirects: value "yes": want true or false`},
		{in: `format="text" keepfd=three`, want: `field keepfd: value "three": want a descriptor number`},
		{in: `format="text" keepfd=-1`, want: `field keepfd: value "-1": want a descriptor number`},
		{in: `format="text" gcenv=maybe`, want: `field gcenv: value "maybe": want true or false`},
		{in: `format="text" startgc=0`, want: `field startgc: value "0": want a GOGC percentage, 1 or more`},
		{in: `format="text" startgc=off`, want: `field startgc: value "off": want a GOGC percentage, 1 or more`},
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

// TestCleanupSpec: a clean-up process reads what to release from its
// environment; a supervisor that named nothing leaves it to the command
// (EnvCleanup=1), and a value naming nothing or unreadable is an error.
func TestCleanupSpec(t *testing.T) {
	named := Spec{LogFormat: "json", LogLevel: "debug", LogAttrs: []string{"node", "m1"}, Ledgers: []string{"/run/vipstack/vrrp-net.vips"}, Redirects: true}
	b, err := named.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, env string
		want      Spec
		ok        bool
		err       string
	}{
		{name: "not a clean-up", env: ""},
		{name: "the command releases", env: cleanupAll},
		{name: "named", env: string(b), want: named, ok: true},
		{name: "names nothing", env: `format="text" level="info"`, ok: true, err: `names nothing to release: want a ledger or redirects=true`},
		{name: "unreadable", env: `format="text" ledger="x`, ok: true, err: `field ledger: value "\"x": want a Go-quoted string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvCleanup, tc.env)
			got, ok, err := CleanupSpec()
			if ok != tc.ok || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("CleanupSpec() = %+v, %v, %v; want ok %v, error %q", got, ok, err, tc.ok, tc.err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(Spec{})); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStartGC: the start-up's GOGC goes to the child only when the user
// set neither GOGC nor GOMEMLIMIT, and the child takes it out of its
// environment.
func TestStartGC(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want []string
	}{
		{Spec{StartGC: 5, gcEnv: true}, []string{"GOGC=5", EnvStartGC + "=1"}},
		{Spec{StartGC: 5}, nil}, // the user's GOGC or GOMEMLIMIT
		{Spec{gcEnv: true}, nil},
	} {
		if diff := cmp.Diff(tc.want, tc.spec.childEnv()); diff != "" {
			t.Errorf("childEnv of %+v (-want +got):\n%s", tc.spec, diff)
		}
	}
	t.Setenv("GOGC", "5")
	t.Setenv(EnvStartGC, "1")
	if !TakeStartGC() {
		t.Fatal("TakeStartGC = false with the supervisor's GOGC set")
	}
	for _, k := range []string{"GOGC", EnvStartGC} {
		if v, set := os.LookupEnv(k); set {
			t.Errorf("%s=%q left in the environment", k, v)
		}
	}
	t.Setenv("GOGC", "200") // the user's
	if TakeStartGC() {
		t.Error("TakeStartGC = true without its mark")
	}
	if os.Getenv("GOGC") != "200" {
		t.Error("the user's GOGC was taken out")
	}
}

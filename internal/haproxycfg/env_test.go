package haproxycfg

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testEnv is the environment of the variable tests: what haproxy is run
// with in TestVariablesMatchHaproxy, and what splitWords looks up.
var testEnv = map[string]string{
	"VS_A":     "aval",
	"VS_EMPTY": "",
	"VS_WORDS": "x   y\tz",
	"VS_PAD":   " p ",
	"VS_SPACE": "two words",
	"VS_DOLL":  "$VS_A",
}

func lookupTest(name string) (string, bool) {
	v, ok := testEnv[name]
	return v, ok
}

// envCases are lines after "  .notice " with the words haproxy 2.6.12
// makes of them (measured; TestVariablesMatchHaproxy measures again), or
// its error message up to vipstack's "(accepted: ...)".
var envCases = []struct {
	name    string
	in      string
	want    []string
	wantErr string
}{
	{name: "dollar name", in: `"[$VS_A]"`, want: []string{"[aval]"}},
	{name: "braces", in: `"[${VS_A}]"`, want: []string{"[aval]"}},
	{name: "name ends at a dot", in: `"$VS_A.x"`, want: []string{"aval.x"}},
	{name: "name takes underscores", in: `"[$VS_A_x]"`, want: []string{"[]"}},
	{name: "a trailing empty word is dropped", in: `"$VS_UNSET"`, want: nil},
	{name: "unset is nothing", in: `"a${VS_UNSET}b"`, want: []string{"ab"}},
	{name: "unset alone, then a word", in: `"$VS_UNSET" b`, want: []string{"", "b"}},
	{name: "default when unset", in: `"${VS_UNSET-dflt}"`, want: []string{"dflt"}},
	{name: "default not when empty", in: `"[${VS_EMPTY-dflt}]"`, want: []string{"[]"}},
	{name: "default not when set", in: `"${VS_A-dflt}"`, want: []string{"aval"}},
	{name: "default is raw", in: `"${VS_UNSET-$VS_A\x41"#}"`, want: []string{`$VS_A\x41"#`}},
	{name: "value is not expanded again", in: `"$VS_DOLL"`, want: []string{"$VS_A"}},
	{name: "blanks in a value stay", in: `"$VS_SPACE"`, want: []string{"two words"}},
	{name: "word expansion", in: `"${VS_WORDS[*]}"`, want: []string{"x", "y", "z"}},
	{name: "word expansion of a padded value", in: `"${VS_PAD[*]}"`, want: []string{"", "p"}},
	{name: "word expansion of a default", in: `"${VS_UNSET[*]-a  b}"`, want: []string{"a", "b"}},
	{name: "star without braces is text", in: `"$VS_A[*]"`, want: []string{"aval[*]"}},
	{name: "unquoted dollar is text", in: `$VS_A`, want: []string{"$VS_A"}},
	{name: "single-quoted dollar is text", in: `'$VS_A'`, want: []string{"$VS_A"}},
	{name: "escaped dollar", in: `"\$VS_A"`, want: []string{"$VS_A"}},
	{name: "pseudo-variables", in: `"${.FILE}:${.LINE}:${.SECTION}:$.LINE"`, want: []string{"h.cfg:2:global:2"}},
	{name: "digit first", in: `"$1"`, wantErr: "forbidden first char in environment variable name at position 13"},
	{name: "dollar alone", in: `"x$"`, wantErr: "forbidden first char in environment variable name at position 14"},
	{name: "blank after dollar", in: `"$ A"`, wantErr: "forbidden first char in environment variable name at position 13"},
	{name: "empty braces", in: `"${}"`, wantErr: "forbidden first char in environment variable name at position 14"},
	{name: "unknown pseudo-variable", in: `"${.FOO}"`, wantErr: "forbidden first char in environment variable name at position 14"},
	{name: "open brace", in: `"${VS_A"`, wantErr: "unmatched brace in environment variable name at position 13"},
	{name: "open brace after a default", in: `"${VS_A-x"`, wantErr: "unmatched brace in environment variable name at position 13"},
	{name: "shell's :-", in: `"${VS_A:-x}"`, wantErr: "unmatched brace in environment variable name at position 13"},
	{name: "bad expansion", in: `"${VS_A[x]}"`, wantErr: "truncated or invalid word expansion sequence at position 18"},
}

func TestSplitWordsVariables(t *testing.T) {
	for _, tt := range envCases {
		t.Run(tt.name, func(t *testing.T) {
			v := &vars{lookup: lookupTest, file: "h.cfg", line: 2, section: "global"}
			got, err := splitWords("  .notice "+tt.in, v)
			if tt.wantErr != "" {
				if !strings.HasPrefix(err, tt.wantErr+" (accepted: ") {
					t.Fatalf("error %q, want %q (accepted: ...)", err, tt.wantErr)
				}
				return
			}
			if err != "" {
				t.Fatal(err)
			}
			if diff := cmp.Diff(append([]string{".notice"}, tt.want...), got); diff != "" {
				t.Errorf("words (-want +got):\n%s", diff)
			}
		})
	}
}

// TestVariablesMatchHaproxy runs each of envCases through haproxy 2.6's
// own parser, as the argument of its .notice directive, which prints its
// one argument or names the first extra one: the words must be
// vipstack's, and haproxy's errors vipstack's up to "(accepted: ...)".
func TestVariablesMatchHaproxy(t *testing.T) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("haproxy not installed")
	}
	env := os.Environ()
	for k, v := range testEnv {
		env = append(env, k+"="+v)
	}
	notice := regexp.MustCompile(`parsing \[h\.cfg:2\]: '(.*)'\.\n`)
	extra := regexp.MustCompile(`Unexpected argument '(.*)' for '\.notice'`)
	alert := regexp.MustCompile(`parsing \[h\.cfg:2\]: (.* at position \d+):`)
	for _, tt := range envCases {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "h.cfg"), []byte("global\n  .notice "+tt.in+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "-c", "-f", "h.cfg")
			cmd.Dir, cmd.Env = dir, env
			out, _ := cmd.CombinedOutput()
			switch {
			case tt.wantErr != "":
				m := alert.FindSubmatch(out)
				if m == nil || string(m[1]) != tt.wantErr {
					t.Errorf("haproxy:\n%s\nwant the error %q", out, tt.wantErr)
				}
			case len(tt.want) <= 1:
				want := strings.Join(tt.want, "") // none: .notice prints ''
				m := notice.FindSubmatch(out)
				if m == nil || string(m[1]) != want {
					t.Errorf("haproxy:\n%s\nwant the word %q", out, want)
				}
			default:
				m := extra.FindSubmatch(out)
				if m == nil || string(m[1]) != tt.want[1] {
					t.Errorf("haproxy:\n%s\nwant the second word %q", out, tt.want[1])
				}
			}
		})
	}
}

func TestVariablesSetByHaproxy(t *testing.T) {
	for _, name := range strings.Fields(haproxyOwnVars) {
		_, err := splitWords(`a "$`+name+`"`, &vars{lookup: func(string) (string, bool) { return "x", true }})
		want := "variable " + name + " at position 5 is one haproxy sets itself, with another value after a reload; vipstack does not set it (write the value)"
		if err != want {
			t.Errorf("%s: error %q, want %q", name, err, want)
		}
	}
	// haproxy sets HAPROXY_LOCALPEER to the host name whatever the
	// environment says (measured: HAPROXY_LOCALPEER=foo haproxy -c
	// prints the host name).
	t.Setenv("HAPROXY_LOCALPEER", "foo")
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := SystemEnv("HAPROXY_LOCALPEER"); got != host || !ok {
		t.Errorf("SystemEnv(HAPROXY_LOCALPEER) = %q, %v; want %q, true", got, ok, host)
	}
	t.Setenv("VS_SYSTEMENV", "v")
	if got, ok := SystemEnv("VS_SYSTEMENV"); got != "v" || !ok {
		t.Errorf("SystemEnv(VS_SYSTEMENV) = %q, %v; want v, true", got, ok)
	}
}

// TestVariablesBounded: an environment cannot make a file larger than
// MaxFileSize.
func TestVariablesBounded(t *testing.T) {
	big := strings.Repeat("x", 300<<10)
	look := func(string) (string, bool) { return big, true }
	data := "global\n  log-tag \"$BIG$BIG\"\n  log-tag \"$BIG$BIG\"\n"
	errs := &errList{}
	splitLines("h.cfg", []byte(data), look, errs)
	want := "h.cfg:3: log-tag: variables expand to more than 1048576 bytes in this file (accepted: at most 1048576, the size limit of the file itself)"
	if err := errs.err(); err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

// TestParseVariables reads a file whose values come from the environment,
// through ParseWith, with .SECTION following the sections.
func TestParseVariables(t *testing.T) {
	env := map[string]string{"FE_PORT": "47011", "BE": "masters", "SERVERS": "127.0.0.1:47012"}
	conf := `defaults
  mode tcp
  timeout client 1s
  timeout server 1s
  timeout connect 1s
frontend fe
  bind "127.0.0.1:${FE_PORT}"
  default_backend "$BE"
backend masters
  server "s-${.SECTION}-${.LINE}" "${SERVERS}"
  server "s${UNSET_INDEX-2}" "${UNSET_ADDR-127.0.0.1:47013}"
`
	cfg, err := ParseWith("h.cfg", []byte(conf), Options{LookupEnv: func(n string) (string, bool) { v, ok := env[n]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{cfg.Frontends[0].Binds[0].Addr.String(), cfg.Frontends[0].Backend,
		cfg.Backends[0].Servers[0].Name, cfg.Backends[0].Servers[0].Addr.String(),
		cfg.Backends[0].Servers[1].Name, cfg.Backends[0].Servers[1].Addr.String()}
	want := []string{"127.0.0.1:47011", "masters", "s-masters-10", "127.0.0.1:47012", "s2", "127.0.0.1:47013"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// Without LookupEnv no variable is set.
	if _, err := Parse("h.cfg", []byte(conf)); err == nil {
		t.Error("Parse without an environment accepted an empty bind address")
	}
}

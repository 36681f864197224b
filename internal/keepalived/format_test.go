package keepalived

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// roundTripOpts compare two models of the same configuration read from
// different text: positions, warnings and the files read differ.
var roundTripOpts = cmp.Options{
	cmpOpts,
	cmpopts.IgnoreTypes(Pos{}),
	// A VIP compares whole (VIP.Equal); its position is ignored here too.
	cmp.Comparer(VIP.SameEntry),
	cmpopts.IgnoreFields(Config{}, "Warnings", "Files"),
	cmpopts.EquateEmpty(),
}

// checkRoundTrip formats cfg, parses the text and checks that the model
// is cfg again. It returns the text.
func checkRoundTrip(t *testing.T, cfg *Config) []byte {
	t.Helper()
	text := Format(cfg)
	again, err := Parse("formatted.conf", text, fstest.MapFS{})
	if err != nil {
		t.Fatalf("Parse(Format(cfg)): %v\ntext:\n%s", err, text)
	}
	if diff := cmp.Diff(cfg, again, roundTripOpts); diff != "" {
		t.Fatalf("Parse(Format(cfg)) differs from cfg (-cfg +reparsed):\n%s\ntext:\n%s", diff, text)
	}
	if again := Format(again); !bytes.Equal(again, text) {
		t.Fatalf("Format is not stable: first\n%s\nthen\n%s", text, again)
	}
	return text
}

// TestFormat parses every testdata config, formats it (compared with
// testdata/TestFormat_*.golden) and parses the text again: the model must
// be the one parsed from the source.
func TestFormat(t *testing.T) {
	for _, name := range testdataConfigs {
		t.Run(strings.ReplaceAll(strings.TrimPrefix(name, "testdata/"), "/", "_"), func(t *testing.T) {
			cfg, err := parseFile(t, name)
			if err != nil {
				t.Fatalf("Parse(%s): %v", name, err)
			}
			text := checkRoundTrip(t, cfg)
			golden := filepath.Join("testdata", strings.ReplaceAll(t.Name(), "/", "_")+".golden")
			if *update {
				if err := os.WriteFile(golden, text, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(text)); diff != "" {
				t.Errorf("Format(%s) mismatch (-want +got):\n%s", name, diff)
			}
		})
	}
}

// TestFormatQuoting checks values that need quotes or escapes to survive
// the lexer and the command split.
func TestFormatQuoting(t *testing.T) {
	cfg, err := Parse("k.conf", []byte(`global_defs {
 router_id "a b{c}#d!e"
 script_user "@u" "include"
 notification_email {
  "include"
  "$x" "~y"
 }
}
vrrp_script "chk x" {
 script "'/bin/echo' \"a\\\\b\" \\044{_PWD} \\n \\x7f"
}
vrrp_instance "{VI}" {
 interface eth0
 virtual_router_id 1
 virtual_ipaddress {
  198.18.0.1 label "a b"
 }
 authentication {
  auth_type PASS
  auth_pass "p#s s!"
 }
 track_script {
  "chk x" weight 0
 }
 notify "/bin/n \"q\""
}
vrrp_sync_group G {
 group {
  "{VI}"
 }
}
`), fstest.MapFS{})
	if err != nil {
		t.Fatal(err)
	}
	checkRoundTrip(t, cfg)
}

// FuzzFormat checks parse-format-parse on every fuzzed input that parses:
// the formatted text parses, to the same model, and formats to the same
// text. Seeds are the testdata configs.
func FuzzFormat(f *testing.F) {
	err := filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".golden") || strings.Contains(p, "include") {
			return err
		}
		data, err := os.ReadFile(p)
		if err == nil {
			f.Add(data)
		}
		return err
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("global_defs {\n smtp_server ::1 2525\n notification_email {\n a@b\n }\n}\n" + vi(" notify_master \"/bin/x 'a b'\"\n")))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("fuzz.conf", data, fstest.MapFS{})
		if err != nil {
			return
		}
		checkRoundTrip(t, cfg)
	})
}

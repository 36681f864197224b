package keepalived

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
)

// errorLine is the shape of every rejection: "file:line: msg" or, for a
// whole-file error, "file: msg".
var errorLine = regexp.MustCompile(`^(\S+?)(:\d+)?: .+`)

// FuzzParse checks that Parse never panics, returns exactly one of a config
// and an error, and that every error names a file. The seed corpus is every
// file under testdata; includes resolve against a copy of testdata in
// memory, so fuzzed include lines reach real files.
func FuzzParse(f *testing.F) {
	fsys := fstest.MapFS{}
	err := filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".golden") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fsys[filepath.ToSlash(p)] = &fstest.MapFile{Data: data}
		f.Add(data)
		return nil
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("include testdata/include/*.conf\n" + vi(" track_script { a weight 1 }\n")))
	f.Add([]byte("vrrp_instance x\n{\n}}{\n\"\\#!\"\n"))

	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("testdata/fuzz.conf", data, fsys)
		if (cfg == nil) == (err == nil) {
			t.Fatalf("Parse returned config %v and error %v; want exactly one", cfg != nil, err)
		}
		if err == nil {
			return
		}
		for _, l := range strings.Split(err.Error(), "\n") {
			if !errorLine.MatchString(l) && !strings.HasPrefix(l, "... and ") {
				t.Fatalf("error line %q does not name a file", l)
			}
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("error %v does not wrap an *Error", err)
		}
	})
}

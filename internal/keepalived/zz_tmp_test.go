package keepalived

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

func TestZZCorpusTiming(t *testing.T) {
	fsys := fstest.MapFS{}
	filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() { return err }
		data, _ := os.ReadFile(p)
		fsys[filepath.ToSlash(p)] = &fstest.MapFile{Data: data}
		return nil
	})
	files, _ := filepath.Glob(filepath.Join(os.Getenv("ZZDIR"), "*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		lines := strings.SplitN(string(b), "\n", 2)
		s := strings.TrimSpace(lines[1])
		s = strings.TrimSuffix(strings.TrimPrefix(s, "[]byte("), ")")
		data, err := strconv.Unquote(s)
		if err != nil { continue }
		st := time.Now()
		Parse("testdata/fuzz.conf", []byte(data), fsys)
		if d := time.Since(st); d > time.Millisecond {
			t.Logf("%v %d bytes %s %q", d, len(data), filepath.Base(f), data[:min(len(data), 200)])
		}
	}
}

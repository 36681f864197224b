package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.tsv")
	if err := os.WriteFile(path, []byte("kind\tfile\tup_class\nhaproxy\ta.cfg\taccept\ncorefile\tb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := Read(path, "kind", "file")
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]string{
		{"kind": "haproxy", "file": "a.cfg", "up_class": "accept"},
		{"kind": "corefile", "file": "b", "up_class": ""},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if _, err := Read(path, "vs_class"); err == nil || !strings.Contains(err.Error(), `no column "vs_class"`) {
		t.Errorf("Read with a missing column: %v, want an error naming it", err)
	}
	empty := filepath.Join(t.TempDir(), "e.tsv")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(empty); err == nil {
		t.Error("Read of an empty file succeeded, want an error")
	}
}

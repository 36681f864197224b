package peers

import (
	"os"
	"path/filepath"
	"testing"
)

// tinyModule writes a module with one main package into a new directory.
func tinyModule(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":           "module example.test/tiny\n\ngo 1.26.0\n",
		"cmd/tiny/main.go": "package main\n\nfunc main() { println(\"tiny\") }\n",
	} {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestSourceKey: the key follows the sources a binary is built from and
// not the tests or their data.
func TestSourceKey(t *testing.T) {
	root := tinyModule(t)
	key := func() string {
		t.Helper()
		k, err := sourceKey(root, "./cmd/tiny")
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(name, text string) {
		t.Helper()
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	k0 := key()
	write("cmd/tiny/main_test.go", "package main\n")
	write("cmd/tiny/testdata/x.go", "package x\n")
	write(".git/HEAD", "ref: refs/heads/main\n")
	write("README.md", "tiny\n")
	if k := key(); k != k0 {
		t.Errorf("a test, test data, .git or a text file changed the key: %s, was %s", k, k0)
	}
	write("cmd/tiny/main.go", "package main\n\nfunc main() { println(\"tiny 2\") }\n")
	k1 := key()
	if k1 == k0 {
		t.Error("a change of main.go kept the key")
	}
	write("go.sum", "example.test/dep v1.0.0 h1:x=\n")
	if k := key(); k == k1 {
		t.Error("a change of go.sum kept the key")
	}
	if k, err := sourceKey(root, "./cmd/other"); err != nil || k == key() {
		t.Errorf("another package: key %s, %v; want one of its own", k, err)
	}
}

// TestBuildCached: the second build of one source state is the first's
// binary (one file, linked), and a change of the sources builds anew.
func TestBuildCached(t *testing.T) {
	old := buildCacheDir
	buildCacheDir = t.TempDir()
	t.Cleanup(func() { buildCacheDir = old })
	root := tinyModule(t)
	build := func() string {
		t.Helper()
		p, err := buildCached(root, t.TempDir(), "tiny", "./cmd/tiny")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := build(), build()
	fa, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := os.Stat(b)
	if err != nil {
		t.Fatal(err)
	}
	if a == b || !os.SameFile(fa, fb) {
		t.Errorf("%s and %s: want two names of one cached binary", a, b)
	}
	if err := os.WriteFile(filepath.Join(root, "cmd/tiny/main.go"), []byte("package main\n\nfunc main() { println(\"tiny 2\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := build()
	fc, err := os.Stat(c)
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(fa, fc) {
		t.Error("a change of the sources gave the old binary")
	}
}

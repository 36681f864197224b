package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines keeps cmd/vipstack thin: flag parsing and wiring, with
// what a command does in internal/ packages.
const maxFuncLines = 80

// TestFunctionsAreShort fails naming every function of the command (tests
// aside) longer than maxFuncLines, from its func line to its closing brace.
func TestFunctionsAreShort(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			checked++
			from, to := fset.Position(fd.Pos()), fset.Position(fd.End())
			if n := to.Line - from.Line + 1; n > maxFuncLines {
				t.Errorf("%s:%d: func %s is %d lines, over %d: move what it does to an internal/ package", name, from.Line, fd.Name.Name, n, maxFuncLines)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d functions; want the package's (run from cmd/vipstack)", checked)
	}
}

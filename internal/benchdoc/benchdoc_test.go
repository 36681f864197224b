package benchdoc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReplace(t *testing.T) {
	begin, end := markers("lb")
	page := "# B\n\nintro\n\n" + begin + "\nold table\n" + end + "\n\nKnown gaps: hand-written.\n"
	got, err := Replace([]byte(page), "lb", []byte("\nnew table\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := "# B\n\nintro\n\n" + begin + "\n\nnew table\n\n" + end + "\n\nKnown gaps: hand-written.\n"
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// Running it again gives the same page: the block does not grow.
	again, err := Replace(got, "lb", []byte("new table"))
	if err != nil || string(again) != want {
		t.Errorf("second replace: %v\n%s", err, again)
	}
}

func TestReplaceErrors(t *testing.T) {
	begin, end := markers("lb")
	for name, page := range map[string]string{
		"no block":  "# B\n",
		"no end":    begin + "\nx\n",
		"twice":     begin + "\n" + end + "\n" + begin + "\n" + end + "\n",
		"other one": strings.ReplaceAll(begin+"\n"+end, "lb", "dns"),
	} {
		if _, err := Replace([]byte(page), "lb", []byte("x")); err == nil {
			t.Errorf("%s: no error", name)
		} else if !strings.Contains(err.Error(), "begin lb") {
			t.Errorf("%s: error %q does not name the marker", name, err)
		}
	}
}

func TestUpdateLeavesFileOnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.md")
	if err := os.WriteFile(path, []byte("no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Update(path, "lb", []byte("x"))
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want one naming %s", err, path)
	}
	if b, _ := os.ReadFile(path); string(b) != "no markers\n" {
		t.Errorf("file changed to %q", b)
	}
}

func TestReportFormats(t *testing.T) {
	var r Report
	r.Para("Median of %d rounds:", 3)
	tb := Table{Header: []string{"figure", "vipstack", "result"}}
	tb.Add("requests/s", "42.0k", "PASS")
	tb.Add("a|b", "1")
	r.Table(tb)
	r.List([]string{"PASS one", "MISS two"})
	r.List(nil)

	var md strings.Builder
	if err := r.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	wantMD := "Median of 3 rounds:\n\n" +
		"| figure | vipstack | result |\n|---|---|---|\n" +
		"| requests/s | 42.0k | PASS |\n| a\\|b | 1 |  |\n\n" +
		"- PASS one\n- MISS two\n"
	if md.String() != wantMD {
		t.Errorf("markdown:\n%s\nwant\n%s", md.String(), wantMD)
	}

	var txt strings.Builder
	if err := r.Text(&txt); err != nil {
		t.Fatal(err)
	}
	wantTxt := "Median of 3 rounds:\n\n" +
		"figure      vipstack  result\n" +
		"requests/s  42.0k     PASS\n" +
		"a|b         1\n\n" +
		"PASS one\nMISS two\n"
	if txt.String() != wantTxt {
		t.Errorf("text:\n%q\nwant\n%q", txt.String(), wantTxt)
	}
}

func TestQuoteArgs(t *testing.T) {
	got := quoteArgs([]string{"-rounds", "3", "-only", "vipstack v3-50ms/kill", "it's"})
	want := `-rounds 3 -only 'vipstack v3-50ms/kill' 'it'\''s'`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

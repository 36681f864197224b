package dns

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCorefileSizeLimit checks that a Corefile of MaxCorefileSize bytes is
// read and validated, and one byte more is refused by ReadCorefile (from a
// file, naming it, its size and the limit; from a device without reading
// it whole) and by Validate, Check and Start (given as contents).
func TestCorefileSizeLimit(t *testing.T) {
	head := ". {\n    forward . 198.18.0.1\n}\n#"
	atLimit := head + strings.Repeat("x", MaxCorefileSize-len(head)-1) + "\n"
	over := atLimit + "\n"
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	cf, err := ReadCorefile(write("at-limit", atLimit))
	if err != nil {
		t.Fatalf("ReadCorefile of exactly %d bytes: %v", MaxCorefileSize, err)
	}
	if err := Validate(cf); err != nil {
		t.Fatalf("Validate of exactly %d bytes: %v", MaxCorefileSize, err)
	}

	p := write("over", over)
	want := fmt.Sprintf("dns: %s: %d bytes is larger than the %d accepted for a Corefile", p, MaxCorefileSize+1, MaxCorefileSize)
	if _, err := ReadCorefile(p); err == nil || err.Error() != want {
		t.Errorf("ReadCorefile: %v; want %q", err, want)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		want := fmt.Sprintf("dns: /dev/zero: more than the %d bytes accepted for a Corefile", MaxCorefileSize)
		if _, err := ReadCorefile("/dev/zero"); err == nil || err.Error() != want {
			t.Errorf("ReadCorefile(/dev/zero): %v; want %q", err, want)
		}
	}

	big := Corefile{Path: "big/Corefile", Contents: []byte(over)}
	want = fmt.Sprintf("dns: big/Corefile: %d bytes is larger than the %d accepted for a Corefile", MaxCorefileSize+1, MaxCorefileSize)
	for name, run := range map[string]func(Corefile) error{"Validate": Validate, "Check": srv.Check, "Start": srv.Start} {
		if err := run(big); err == nil || err.Error() != want {
			t.Errorf("%s: %v; want %q", name, err, want)
		}
	}
}

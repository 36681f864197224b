package lbproc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLookupIDs(t *testing.T) {
	for _, tt := range []struct {
		user, group string
		want        IDs
		err         string
	}{
		{want: IDs{UID: -1, GID: -1}},
		{user: "0", group: "0", want: IDs{UID: 0, GID: 0}},
		{user: "root", want: IDs{UID: 0, GID: -1}},
		{group: "65534", want: IDs{UID: -1, GID: 65534}},
		{user: "vshp-no-such-user", err: `user "vshp-no-such-user": no such user on this host`},
		{group: "vshp-no-such-group", err: `group "vshp-no-such-group": no such group on this host`},
	} {
		got, err := LookupIDs(tt.user, tt.group)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("LookupIDs(%q, %q): error %v, want %q", tt.user, tt.group, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("LookupIDs(%q, %q): %v", tt.user, tt.group, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("LookupIDs(%q, %q) (-want +got):\n%s", tt.user, tt.group, diff)
		}
	}
}

// TestPIDFile: written with a newline, removed only while it still holds
// this pid.
func TestPIDFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lb.pid")
	if err := WritePIDFile(path, 42); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "42\n" {
		t.Errorf("pidfile holds %q, want %q", b, "42\n")
	}
	if err := RemovePIDFile(path, 43); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("another process's pidfile was removed: %v", err)
	}
	if err := RemovePIDFile(path, 42); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("pidfile still there: %v", err)
	}
	if err := RemovePIDFile(path, 42); err != nil {
		t.Errorf("removing a missing pidfile: %v", err)
	}
}

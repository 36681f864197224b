package netif

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var addrCmp = []cmp.Option{
	cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
	cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
}

func TestLedgerRoundTrip(t *testing.T) {
	dir := t.TempDir()
	l := Ledger{Path: filepath.Join(dir, "vips")}

	got, err := l.Load()
	if err != nil || got != nil {
		t.Fatalf("Load() of a missing file = %v, %v; want nil, nil", got, err)
	}

	steps := []struct {
		name string
		save []VIP
	}{
		{name: "two", save: []VIP{
			{Prefix: netip.MustParsePrefix("198.18.0.100/32"), Dev: "eth0", Label: "eth0:vip"},
			{Prefix: netip.MustParsePrefix("fd00:bb::100/128"), Dev: "eth0", NoPrefixRoute: true},
		}},
		{name: "one", save: []VIP{{Prefix: netip.MustParsePrefix("198.18.0.101/24"), Dev: "eth1", Scope: "link",
			Broadcast: netip.MustParseAddr("198.18.0.255")}}},
		{name: "empty", save: nil},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if err := l.Save(s.save); err != nil {
				t.Fatalf("Save: %v", err)
			}
			got, err := l.Load()
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if diff := cmp.Diff(s.save, got, addrCmp...); diff != "" {
				t.Errorf("Load after Save (-want +got):\n%s", diff)
			}
			// No temporary file is left behind.
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			if diff := cmp.Diff([]string{"vips"}, names); diff != "" {
				t.Errorf("directory (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLedgerFormat(t *testing.T) {
	l := Ledger{Path: filepath.Join(t.TempDir(), "vips")}
	if err := l.Save([]VIP{{Prefix: netip.MustParsePrefix("198.18.0.100/32"), Dev: "eth0", Label: "eth0:vip"}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(l.Path)
	if err != nil {
		t.Fatal(err)
	}
	want := ledgerHeader + "198.18.0.100/32 dev eth0 label eth0:vip\n"
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("file (-want +got):\n%s", diff)
	}
}

func TestLedgerErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("# c\n\n198.18.0.100/32 dev eth0\n198.18.0.101/32 dev eth0 label eth0:much-too-long\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Ledger{Path: bad}.Load()
	if err == nil || !strings.Contains(err.Error(), bad+":4:") || !strings.Contains(err.Error(), `"eth0:much-too-long"`) {
		t.Errorf("Load of a bad line = %v; want the path, line 4 and the bad label", err)
	}

	l := Ledger{Path: filepath.Join(dir, "v")}
	err = l.Save([]VIP{{Prefix: netip.MustParsePrefix("198.18.0.100/32")}})
	if err == nil || !strings.Contains(err.Error(), "entry 0") {
		t.Errorf("Save of an invalid VIP = %v; want an error naming entry 0", err)
	}
	if _, err := os.Stat(l.Path); !os.IsNotExist(err) {
		t.Errorf("Save of an invalid VIP wrote the file (stat: %v)", err)
	}

	missingDir := Ledger{Path: filepath.Join(dir, "no", "such", "dir", "v")}
	if err := missingDir.Save(nil); err == nil {
		t.Errorf("Save into a missing directory succeeded")
	}
}

// TestLedgerIn: the name is kept to file-name characters and followed by
// the network namespace, and the state directory is made.
func TestLedgerIn(t *testing.T) {
	ns := "net"
	if link, err := os.Readlink("/proc/self/ns/net"); err == nil {
		ns = strings.NewReplacer(":", "", "[", "-", "]", "").Replace(link)
	}
	dir := filepath.Join(t.TempDir(), "state")
	for _, tt := range []struct{ name, want string }{
		{name: "vrrp", want: "vrrp-" + ns + ".vips"},
		{name: "k8s-agent", want: "k8s-agent-" + ns + ".vips"},
		{name: "ipfailover-ha/pool 1", want: "ipfailover-ha_pool_1-" + ns + ".vips"},
	} {
		l, err := LedgerIn(dir, tt.name)
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(dir, tt.want); l.Path != want {
			t.Errorf("LedgerIn(%q) = %q; want %q", tt.name, l.Path, want)
		}
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("state directory: %v, %v; want a directory with mode 0700", fi, err)
	}
}

// TestLedgerAppend: Append creates the ledger with its header, adds to
// what a Save wrote without rewriting it (the inode stays), a VIP listed
// twice is loaded once, and a last line cut short (an Append a crash
// interrupted) is skipped while a bad line before the end still fails.
func TestLedgerAppend(t *testing.T) {
	vip := func(s string) VIP { return VIP{Prefix: netip.MustParsePrefix(s), Dev: "eth0"} }
	a, b, c := vip("198.18.0.10/32"), vip("198.18.0.11/32"), vip("fd00:bb::100/128")
	l := Ledger{Path: filepath.Join(t.TempDir(), "vips")}
	if err := l.Append([]VIP{a}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(l.Path)
	if err != nil {
		t.Fatal(err)
	}
	if want := ledgerHeader + a.String() + "\n"; string(got) != want {
		t.Errorf("a new ledger by Append reads %q, want %q", got, want)
	}
	if err := l.Save([]VIP{a, b}); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(l.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append([]VIP{b, c}); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(l.Path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("Append replaced the file; want it appended to")
	}
	loaded, err := l.Load()
	if err != nil {
		t.Fatal(err)
	}
	if want := []VIP{a, b, c}; !slices.Equal(loaded, want) {
		t.Errorf("Load after Save and Append = %v, want %v", loaded, want)
	}

	if err := l.Append([]VIP{{Prefix: netip.MustParsePrefix("198.18.0.12/32")}}); err == nil || !strings.Contains(err.Error(), "entry 0") {
		t.Errorf("Append of an invalid VIP = %v; want an error naming entry 0", err)
	}

	f, err := os.OpenFile(l.Path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("198.18.0.13/32 de"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	loaded, err = l.Load()
	if err != nil {
		t.Errorf("Load with a last line cut short: %v, want it skipped", err)
	}
	if want := []VIP{a, b, c}; !slices.Equal(loaded, want) {
		t.Errorf("Load with a last line cut short = %v, want %v", loaded, want)
	}
	if err := os.WriteFile(l.Path, []byte("198.18.0.13/32 de\n"+a.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Load(); err == nil || !strings.Contains(err.Error(), l.Path+":1:") {
		t.Errorf("Load of a bad first line = %v; want an error naming line 1", err)
	}
}

package engine

import (
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/syncbuf"
)

// ledgerFixture is what the ledger writer's tests share: three VIPs, a
// ledger in a directory of the test's and its writer.
type ledgerFixture struct {
	t       *testing.T
	a, b, c netif.VIP
	l       netif.Ledger
	w       *ledgerWriter
}

func newLedgerFixture(t *testing.T) *ledgerFixture {
	vip := func(s string) netif.VIP { return netif.VIP{Prefix: netip.MustParsePrefix(s), Dev: "eth0"} }
	l := netif.Ledger{Path: filepath.Join(t.TempDir(), "vips")}
	return &ledgerFixture{t: t, a: vip("198.18.0.10/32"), b: vip("198.18.0.11/32"), c: vip("fd00:bb::100/128"), l: l, w: newLedgerWriter(l)}
}

func (f *ledgerFixture) fail(err error) { f.t.Errorf("background write: %v", err) }

func (f *ledgerFixture) stat() os.FileInfo {
	f.t.Helper()
	fi, err := os.Stat(f.l.Path)
	if err != nil {
		f.t.Fatal(err)
	}
	return fi
}

// same checks that the ledger lists want, in that order.
func (f *ledgerFixture) same(step string, want ...netif.VIP) {
	f.t.Helper()
	got, err := f.l.Load()
	if err != nil {
		f.t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		f.t.Errorf("%s: the ledger lists %v, want %v", step, got, want)
	}
}

// TestLedgerWriter: lists are written at once or in the background, the
// newest wins, a list equal to the one on file is not written again (the
// file is replaced by a rename on every write, so its inode tells), and a
// failed write is tried again.
func TestLedgerWriter(t *testing.T) {
	f := newLedgerFixture(t)
	a, b, c, l, w, fail, same := f.a, f.b, f.c, f.l, f.w, f.fail, f.same

	if err := w.now([]netif.VIP{a, b}); err != nil {
		t.Fatal(err)
	}
	same("now", a, b)
	before := f.stat()
	if err := w.now([]netif.VIP{b, a}); err != nil {
		t.Fatal(err)
	}
	w.later([]netif.VIP{a, b})
	w.flush(fail)
	if !os.SameFile(before, f.stat()) {
		t.Error("the same list in another order was written again")
	}

	w.later([]netif.VIP{a})
	same("later, before the writer ran", a, b)
	w.flush(fail)
	same("later, after", a)

	// A background list older than a list written at once is dropped.
	w.later([]netif.VIP{b})
	if err := w.now([]netif.VIP{a, c}); err != nil {
		t.Fatal(err)
	}
	w.flush(fail)
	same("later then now", a, c)

	// A failed write leaves the next one to write whatever it compares to.
	dir := filepath.Dir(l.Path)
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 { // root writes anyway
		if err := w.now([]netif.VIP{a}); err == nil {
			t.Error("a write into a read-only directory succeeded")
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := w.now([]netif.VIP{a}); err != nil {
		t.Fatal(err)
	}
	same("after a failure", a)
}

// TestLedgerWriterAdd: add appends only the VIPs not on file (the file is
// not replaced, so its inode stays), drops a background list handed in
// before it (that list may lack them) even when it appends nothing, and a
// list written after it replaces the file again.
func TestLedgerWriterAdd(t *testing.T) {
	f := newLedgerFixture(t)
	a, b, c, w, fail, stat, same := f.a, f.b, f.c, f.w, f.fail, f.stat, f.same

	if err := w.now([]netif.VIP{a}); err != nil {
		t.Fatal(err)
	}
	first := stat()
	if err := w.add([]netif.VIP{a, b}); err != nil {
		t.Fatal(err)
	}
	same("add", a, b)
	if !os.SameFile(first, stat()) {
		t.Error("add replaced the file; want the new entry appended")
	}
	size := stat().Size()
	if err := w.add([]netif.VIP{b, a}); err != nil {
		t.Fatal(err)
	}
	if got := stat().Size(); got != size {
		t.Errorf("add of VIPs on file grew the file from %d to %d bytes", size, got)
	}

	// A release lists a alone for later; b is taken again before the
	// writer runs: the older list must not drop b, although b was on
	// file and add appended nothing.
	w.later([]netif.VIP{a})
	if err := w.add([]netif.VIP{b}); err != nil {
		t.Fatal(err)
	}
	w.flush(fail)
	same("later, then add of an entry on file", a, b)

	w.later([]netif.VIP{a})
	w.flush(fail)
	same("later", a)
	if os.SameFile(first, stat()) {
		t.Error("a list dropping an entry was appended; want the file replaced")
	}
	if err := w.add([]netif.VIP{b, c}); err != nil {
		t.Fatal(err)
	}
	same("add after later", a, b, c)
}

// TestLedgerWriterRun: run writes what later hands in, and the list still
// pending when it is stopped before it returns.
func TestLedgerWriterRun(t *testing.T) {
	l := netif.Ledger{Path: filepath.Join(t.TempDir(), "vips")}
	w := newLedgerWriter(l)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		w.run(stop, func(err error) { t.Errorf("background write: %v", err) })
	}()
	v := netif.VIP{Prefix: netip.MustParsePrefix("198.18.0.10/32"), Dev: "eth0"}
	w.later([]netif.VIP{v})
	close(stop)
	<-done
	got, err := l.Load()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []netif.VIP{v}) {
		t.Errorf("after run returned the ledger lists %v, want %v", got, []netif.VIP{v})
	}
}

// TestWarnLedgerOnDisk: a ledger outside memory is warned about, naming
// its directory and file system; one on a tmpfs is not.
func TestWarnLedgerOnDisk(t *testing.T) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("needs Linux and root (to mount a tmpfs)")
	}
	var buf syncbuf.Buffer
	e := &Engine{log: slog.New(slog.NewTextHandler(&buf, nil)), opts: Options{Ledger: netif.Ledger{Path: "/proc/vrrp.vips"}}}
	e.warnLedgerOnDisk()
	for _, want := range []string{"level=WARN", "the VIP ledger is on a disk file system", "dir=/proc", `fs="file system type 0x9fa0"`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log %q lacks %q", buf.String(), want)
		}
	}
	dir := t.TempDir()
	if err := unix.Mount("vipstack-test", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	var quiet syncbuf.Buffer
	e = &Engine{log: slog.New(slog.NewTextHandler(&quiet, nil)), opts: Options{Ledger: netif.Ledger{Path: filepath.Join(dir, "vrrp.vips")}}}
	e.warnLedgerOnDisk()
	if quiet.String() != "" {
		t.Errorf("a ledger on a tmpfs logged %q", quiet.String())
	}
}

// TestLedgerKeys: the keys are the ledger's lines, VIP.String, in order.
func TestLedgerKeys(t *testing.T) {
	vips := []netif.VIP{
		{Prefix: netip.MustParsePrefix("198.18.0.10/32"), Dev: "eth0"},
		{Prefix: netip.MustParsePrefix("198.18.0.11/24"), Dev: "eth1", Label: "eth1:vip", Scope: "link", Broadcast: netip.MustParseAddr("198.18.0.255"), NoPrefixRoute: true},
		{Prefix: netip.MustParsePrefix("fd00::1/128"), Dev: "eth0", Preferred: true},
	}
	var want []string
	for _, v := range vips {
		want = append(want, v.String())
	}
	if diff := cmp.Diff(want, ledgerKeys(vips)); diff != "" {
		t.Errorf("ledgerKeys (-want +got):\n%s", diff)
	}
	if got := ledgerKeys(nil); got != nil {
		t.Errorf("ledgerKeys(nil) = %q, want nil", got)
	}
}

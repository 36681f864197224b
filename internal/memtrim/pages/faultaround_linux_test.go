package pages

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"unsafe"
)

// fileMapping maps a file of n pages, written just now (so that the page
// cache holds every page), privately and read-only, as the loader maps
// an executable's text and read-only data.
func fileMapping(t *testing.T, n int) ([]byte, Mapping) {
	t.Helper()
	ps := os.Getpagesize()
	data := make([]byte, n*ps)
	for i := range data {
		data[i] = byte(i / ps)
	}
	path := filepath.Join(t.TempDir(), "pages")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := syscall.Mmap(int(f.Fd()), 0, len(data), syscall.PROT_READ, syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(b) })
	start := uintptr(unsafe.Pointer(&b[0]))
	return b, Mapping{Start: start, End: start + uintptr(len(b)), Perms: "r--p", Path: path}
}

// present counts the pages of m mapped in this process (/proc/self/pagemap:
// bit 63 of each page's entry).
func present(t *testing.T, m Mapping) int {
	t.Helper()
	ps := uintptr(os.Getpagesize())
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, (m.End-m.Start)/ps*8)
	if _, err := f.ReadAt(buf, int64(m.Start/ps*8)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := 0; i < len(buf); i += 8 {
		if binary.LittleEndian.Uint64(buf[i:])&(1<<63) != 0 {
			n++
		}
	}
	return n
}

var sink byte

// touch reads one byte of page i of b.
func touch(b []byte, i int) {
	sink += b[i*os.Getpagesize()]
}

func TestNoFaultAround(t *testing.T) {
	const pages = 64 // 256 KiB: four fault-around windows of 64 KiB

	// Without it, one read maps the cached neighbours of its page too.
	b, m := fileMapping(t, pages)
	if n := present(t, m); n != 0 {
		t.Fatalf("%d pages mapped before any read, want 0", n)
	}
	touch(b, 33)
	around := present(t, m)
	if around == 1 {
		t.Skip("the kernel maps one page per fault already (fault_around_bytes is a page): nothing to compare")
	}

	b, m = fileMapping(t, pages)
	if err := NoFaultAround([]Mapping{m}); err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) && (errno == syscall.EINVAL || errno == syscall.EPERM || errno == syscall.ENOSYS) {
			t.Skipf("this kernel or its seccomp profile does not allow it: %v", err)
		}
		t.Fatal(err)
	}
	if err := NoFaultAround([]Mapping{m}); err != nil {
		t.Fatalf("registering the mapping again: %v", err)
	}
	touch(b, 33)
	if n := present(t, m); n != 1 {
		t.Errorf("%d pages mapped after reading one, want 1 (%d without NoFaultAround)", n, around)
	}
	touch(b, 34)
	touch(b, 63)
	if n := present(t, m); n != 3 {
		t.Errorf("%d pages mapped after reading three, want 3", n)
	}
	if b[63*os.Getpagesize()] != 63 || b[34*os.Getpagesize()] != 34 {
		t.Errorf("pages 34 and 63 read %d and %d, want their numbers", b[34*os.Getpagesize()], b[63*os.Getpagesize()])
	}
}

// TestDropMapsBackOnePage: after Drop, what the process reads again comes
// back page by page, not as the 64 KiB around it.
func TestDropMapsBackOnePage(t *testing.T) {
	if err := NoFaultAround(nil); err != nil {
		t.Skipf("NoFaultAround cannot work here: %v", err)
	}
	b, m := fileMapping(t, 64)
	for i := range 64 {
		touch(b, i)
	}
	if n := present(t, m); n != 64 {
		t.Fatalf("%d pages mapped after reading all 64", n)
	}
	released, err := Drop([]Mapping{m})
	if err != nil {
		t.Fatal(err)
	}
	if released != m.End-m.Start {
		t.Errorf("Drop released %d bytes, want the mapping's %d", released, m.End-m.Start)
	}
	if n := present(t, m); n != 0 {
		t.Fatalf("%d pages mapped after Drop, want 0", n)
	}
	touch(b, 17)
	if n := present(t, m); n != 1 {
		t.Errorf("%d pages mapped after reading one after Drop, want 1", n)
	}
	if got := b[17*os.Getpagesize()]; got != 17 {
		t.Errorf("page 17 read %d after Drop, want 17: the file's page", got)
	}
}

// TestRefused: where a seccomp profile refuses userfaultfd (containerd's
// default one does), NoFaultAround says so and Drop works as before. The
// test runs itself again with a filter on the thread that refuses the
// call with EPERM, as the runtime's profile would.
func TestRefused(t *testing.T) {
	if os.Getenv("VIPSTACK_TEST_REFUSED") == "1" {
		refusedChild(t)
		return
	}
	if sysUserfaultfd == 0 {
		t.Skip("the system call's number is not known on this architecture")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRefused$", "-test.v")
	cmd.Env = append(os.Environ(), "VIPSTACK_TEST_REFUSED=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child under the filter: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("userfaultfd: operation not permitted")) {
		t.Errorf("the child did not report the refusal:\n%s", out)
	}
}

func refusedChild(t *testing.T) {
	// The filter is the thread's: everything below runs on it.
	runtime.LockOSThread()
	refuse(t, sysUserfaultfd)
	err := NoFaultAround(nil)
	if !errors.Is(err, syscall.EPERM) {
		t.Fatalf("NoFaultAround under a filter refusing userfaultfd = %v, want EPERM", err)
	}
	t.Logf("NoFaultAround: %v", err)

	b, m := fileMapping(t, 64)
	for i := range 64 {
		touch(b, i)
	}
	if _, err := Drop([]Mapping{m}); err != nil {
		t.Fatalf("Drop when NoFaultAround is refused: %v", err)
	}
	if n := present(t, m); n != 0 {
		t.Fatalf("%d pages mapped after Drop, want 0", n)
	}
	touch(b, 17)
	if n := present(t, m); n < 1 {
		t.Errorf("%d pages mapped after reading one, want at least that one", n)
	}
	if got := b[17*os.Getpagesize()]; got != 17 {
		t.Errorf("page 17 read %d after Drop, want 17", got)
	}
}

// refuse installs on this thread a seccomp filter that fails system call
// nr with EPERM and allows every other.
func refuse(t *testing.T, nr uintptr) {
	t.Helper()
	type sockFilter struct {
		code   uint16
		jt, jf uint8
		k      uint32
	}
	const (
		ldAbsW   = 0x20 // BPF_LD | BPF_W | BPF_ABS
		jeqK     = 0x15 // BPF_JMP | BPF_JEQ | BPF_K
		retK     = 0x06 // BPF_RET | BPF_K
		retErrno = 0x00050000
		retAllow = 0x7fff0000
	)
	prog := []sockFilter{
		{code: ldAbsW, k: 0}, // seccomp_data.nr
		{code: jeqK, k: uint32(nr), jt: 0, jf: 1},
		{code: retK, k: retErrno | uint32(syscall.EPERM)},
		{code: retK, k: retAllow},
	}
	fprog := struct {
		len    uint16
		filter *sockFilter
	}{uint16(len(prog)), &prog[0]}
	const prSetNoNewPrivs, prSetSeccomp, seccompModeFilter = 38, 22, 2
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0); e != 0 {
		t.Fatalf("prctl PR_SET_NO_NEW_PRIVS: %v", e)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetSeccomp, seccompModeFilter, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		t.Fatalf("prctl PR_SET_SECCOMP: %v", e)
	}
	runtime.KeepAlive(prog)
}

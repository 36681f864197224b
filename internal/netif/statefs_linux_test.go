package netif

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestInMemory: a tmpfs mounted here is in memory; /proc is not, and is
// named by its magic number; a missing directory is an error naming it.
func TestInMemory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := unix.Mount("vipstack-test", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	if mem, name, err := InMemory(dir); err != nil || !mem {
		t.Errorf("InMemory(a tmpfs) = %v, %q, %v; want true", mem, name, err)
	}
	if mem, name, err := InMemory("/proc"); err != nil || mem || name != "file system type 0x9fa0" {
		t.Errorf("InMemory(/proc) = %v, %q, %v; want false, proc's magic", mem, name, err)
	}
	if _, _, err := InMemory(dir + "/missing"); err == nil || !strings.Contains(err.Error(), dir+"/missing") {
		t.Errorf("InMemory(a missing directory): error %v, want one naming it", err)
	}
}

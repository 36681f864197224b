package pages

import (
	"errors"
	"os"
	"strconv"
	"sync"
	"syscall"
	"unsafe"
)

// The kernel maps a page of a file back on a read fault together with
// the neighbours the page cache holds in the same 64 KiB (fault-around,
// /sys/kernel/debug/fault_around_bytes). After a Drop, the few hundred
// pages an engine at rest runs from and reads come back as whole 64 KiB
// windows: an ipfailover engine at 10,000 VIPs held 7.1 MiB of its
// executable, of which 1.3 MiB had been touched in the 8 s before
// (docs/design/memory.md). The kernel turns fault-around off for a
// mapping registered with a userfaultfd for write protection, and allows
// that on any memory in its asynchronous mode (Linux 6.7): the
// descriptor never reports a fault (the mappings are never written, and
// asynchronous write protection resolves faults without it); it only
// marks the mappings.

// The ABI of linux/userfaultfd.h.
const (
	uffdUserModeOnly   = 1 // handle faults from user mode only: needs no privilege
	uffdAPI            = 0xaa
	uffdFeatureWPAsync = 1 << 15
	uffdioAPI          = 0xc018aa3f // _IOWR(0xaa, 0x3f, struct uffdio_api)
	uffdioRegister     = 0xc020aa00 // _IOWR(0xaa, 0x00, struct uffdio_register)
	uffdRegisterModeWP = 1 << 1
)

var errArch = errors.New("pages: the userfaultfd system call's number is not known on this architecture")

type uffdioAPIArg struct{ api, features, ioctls uint64 }

type uffdioRegisterArg struct{ start, len, mode, ioctls uint64 }

var faultAround struct {
	once sync.Once
	fd   int
	err  error
}

// faultAroundFD opens the process's userfaultfd in asynchronous
// write-protect mode, once; the descriptor stays open for the process's
// life, as closing it would unregister the mappings.
func faultAroundFD() (int, error) {
	f := &faultAround
	f.once.Do(func() {
		if sysUserfaultfd == 0 {
			f.err = errArch
			return
		}
		fd, _, e := syscall.Syscall(sysUserfaultfd, syscall.O_CLOEXEC|uffdUserModeOnly, 0, 0)
		if e != 0 {
			f.err = os.NewSyscallError("userfaultfd", e)
			return
		}
		api := uffdioAPIArg{api: uffdAPI, features: uffdFeatureWPAsync}
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, uffdioAPI, uintptr(unsafe.Pointer(&api))); e != 0 {
			syscall.Close(int(fd))
			// EINVAL: a kernel before 6.7, without the asynchronous mode.
			f.err = os.NewSyscallError("userfaultfd API with asynchronous write protection", e)
			return
		}
		f.fd = int(fd)
	})
	return f.fd, f.err
}

// NoFaultAround has the kernel map the pages of ms back one at a time on
// a fault instead of 64 KiB around each (fault-around), so that after a
// Drop the process's resident set is the pages it touches. It needs
// Linux 6.7 or later and the userfaultfd system call (a container's
// seccomp profile may refuse it): otherwise it returns why and the
// kernel goes on faulting 64 KiB at a time. Registering a mapping again
// changes nothing; NoFaultAround(nil) only reports whether it can work.
func NoFaultAround(ms []Mapping) error {
	fd, err := faultAroundFD()
	if err != nil {
		return err
	}
	for _, m := range ms {
		r := uffdioRegisterArg{start: uint64(m.Start), len: uint64(m.End - m.Start), mode: uffdRegisterModeWP}
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), uffdioRegister, uintptr(unsafe.Pointer(&r))); e != 0 {
			return os.NewSyscallError("userfaultfd register "+hex(m.Start)+"-"+hex(m.End)+" "+m.Perms+" "+m.Path, e)
		}
	}
	return nil
}

func hex(p uintptr) string { return strconv.FormatUint(uint64(p), 16) }

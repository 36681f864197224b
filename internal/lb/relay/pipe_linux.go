package relay

import (
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// pipeSize is the capacity asked for each splice pipe (Go's net package
// uses the same); the kernel may refuse it to unprivileged users past
// fs.pipe-user-pages-soft, and the pipe keeps its default 64 KiB.
const pipeSize = 1 << 20

// Pipe is a pipe for splice(2).
type Pipe struct {
	R, W    int // read and write ends
	Size    int // capacity
	cleanup runtime.Cleanup
}

// PipePool keeps empty pipes for reuse. A pipe the garbage collector drops
// from the pool is closed by its cleanup.
type PipePool struct{ p sync.Pool }

func (pp *PipePool) Get() (*Pipe, error) {
	if v := pp.p.Get(); v != nil {
		return v.(*Pipe), nil
	}
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, os.NewSyscallError("pipe2", err)
	}
	p := &Pipe{R: fds[0], W: fds[1], Size: 64 << 10}
	if n, err := unix.FcntlInt(uintptr(fds[0]), unix.F_SETPIPE_SZ, pipeSize); err == nil {
		p.Size = n
	}
	p.cleanup = runtime.AddCleanup(p, closePipe, fds)
	return p, nil
}

// Put returns an empty pipe to the pool.
func (pp *PipePool) Put(p *Pipe) { pp.p.Put(p) }

// Destroy closes a pipe that still holds data.
func (p *Pipe) Destroy() {
	p.cleanup.Stop()
	closePipe([2]int{p.R, p.W})
}

func closePipe(fds [2]int) {
	unix.Close(fds[0])
	unix.Close(fds[1])
}

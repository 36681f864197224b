package lb

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

// spipe is a pipe for splice(2).
type spipe struct {
	r, w    int
	size    int
	cleanup runtime.Cleanup
}

// pipePool keeps empty pipes for reuse. A pipe the garbage collector drops
// from the pool is closed by its cleanup.
type pipePool struct{ p sync.Pool }

func (pp *pipePool) get() (*spipe, error) {
	if v := pp.p.Get(); v != nil {
		return v.(*spipe), nil
	}
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, os.NewSyscallError("pipe2", err)
	}
	p := &spipe{r: fds[0], w: fds[1], size: 64 << 10}
	if n, err := unix.FcntlInt(uintptr(fds[0]), unix.F_SETPIPE_SZ, pipeSize); err == nil {
		p.size = n
	}
	p.cleanup = runtime.AddCleanup(p, closePipe, fds)
	return p, nil
}

// put returns an empty pipe to the pool.
func (pp *pipePool) put(p *spipe) { pp.p.Put(p) }

// destroy closes a pipe that still holds data.
func (p *spipe) destroy() {
	p.cleanup.Stop()
	closePipe([2]int{p.r, p.w})
}

func closePipe(fds [2]int) {
	unix.Close(fds[0])
	unix.Close(fds[1])
}

package k8slab

import (
	"fmt"
	"io"
	"sync"
	"testing"
)

// Program lets code written for tests (kubetest, k8stest, this package)
// run in a program such as a benchmark: Fatal and Skip panic and Do
// recovers them as an error, Cleanup functions run at Close (last first),
// Logf writes to Out when it is set. Only the methods those packages call
// are implemented; any other panics.
type Program struct {
	testing.TB // nil: the methods not implemented below panic

	Out io.Writer // Logf's output; nil: discarded

	mu       sync.Mutex
	cleanups []func()
	failed   bool
}

// fatal is what Fatal panics with.
type fatal struct{ msg string }

// Do runs f, turning a Fatal or Skip inside it into an error.
func (p *Program) Do(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			ft, ok := r.(fatal)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("%s", ft.msg)
		}
	}()
	f()
	return nil
}

// Close runs the Cleanup functions, the last registered first.
func (p *Program) Close() {
	p.mu.Lock()
	cs := p.cleanups
	p.cleanups = nil
	p.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

func (p *Program) Helper() {}

func (p *Program) Logf(format string, args ...any) {
	if p.Out != nil {
		fmt.Fprintf(p.Out, format+"\n", args...)
	}
}

func (p *Program) Errorf(format string, args ...any) {
	p.mu.Lock()
	p.failed = true
	p.mu.Unlock()
	p.Logf(format, args...)
}

func (p *Program) Fatal(args ...any) {
	p.setFailed()
	panic(fatal{fmt.Sprint(args...)})
}

func (p *Program) Fatalf(format string, args ...any) {
	p.setFailed()
	panic(fatal{fmt.Sprintf(format, args...)})
}

func (p *Program) Skip(args ...any) { panic(fatal{"skipped: " + fmt.Sprint(args...)}) }

func (p *Program) Failed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}

func (p *Program) setFailed() {
	p.mu.Lock()
	p.failed = true
	p.mu.Unlock()
}

func (p *Program) Cleanup(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cleanups = append(p.cleanups, f)
}

//go:build !linux

package lb

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// The relay needs Linux: epoll and splice(2). Elsewhere New fails.

type loop struct {
	mu      sync.Mutex
	nconns  atomic.Int32
	handoff []*conn
	now     time.Time
}

type relayState struct{}

func newLoops(*LB, int) ([]*loop, error) {
	return nil, errors.New("the load balancer's relay needs Linux (epoll and splice)")
}

func loopCount() int { return 1 }

func (lp *loop) stop()                  {}
func (lp *loop) start(*conn)            {}
func (lp *loop) post(*conn)             {}
func (lp *loop) unlock()                { lp.mu.Unlock() }
func (lp *loop) closeLocked(*conn)      {}
func (l *LB) failConnects(*server)      {}
func (l *LB) moveConns(_, _ *server)    {}
func (l *LB) sessions() []Session       { return nil }
func (l *LB) closeServer(*server) int   { return 0 }
func (l *LB) closeSession(uintptr) bool { return false }
func closeFD(int)                       {}
func resetFD(int)                       {}
func dropFD(int)                        {}
func prepareDrop(int)                   {}
func discardInput(int) uint64           { return 0 }

func (l *LB) watchListener(*tcpListener)   {}
func (l *LB) unwatchListener(*tcpListener) {}
func (lp *loop) startLocked(*conn)         {}
func (lp *loop) closeFrontend(*frontend)   {}

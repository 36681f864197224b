package main

import (
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/vipstack/vipstack/internal/testnet"
)

// greetPort is where every host's listener runs.
const greetPort = 8080

// listen starts the greeting listener on h: it accepts TCP connections on
// port greetPort on all of h's addresses (the VIP included, while h holds
// it), writes one byte, h's index, and closes. The socket is opened inside
// h's namespace and stays there; the accept loop runs outside it.
func listen(h *testnet.Host) (net.Listener, error) {
	var ln net.Listener
	err := h.Do(func() error {
		var err error
		ln, err = net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(greetPort)))
		return err
	})
	if err != nil {
		return nil, err
	}
	idx := byte(h.Index)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed
			}
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = c.Write([]byte{idx})
			_ = c.Close()
		}
	}()
	return ln, nil
}

// attempt is one connection attempt by the prober.
type attempt struct {
	Start time.Time // just before the dial
	Done  time.Time // when the connection was established (zero on failure)
	From  int       // host index in the greeting; 0 if none
	Err   error
}

// prober opens a TCP connection to addr from the client's namespace every
// `every`, each with its own timeout, so a connection attempt that hangs
// (its SYN went to a node that no longer has the VIP) does not delay the
// next one. It stops after max attempts or when stopped.
type prober struct {
	client  *testnet.Host
	addr    string
	timeout time.Duration

	mu       sync.Mutex
	log      []attempt
	stopc    chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

func startProber(client *testnet.Host, addr string, every, timeout time.Duration, max int) *prober {
	p := &prober{client: client, addr: addr, timeout: timeout, stopc: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := 0; i < max; i++ {
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				a := p.once()
				p.mu.Lock()
				p.log = append(p.log, a)
				p.mu.Unlock()
			}()
			select {
			case <-p.stopc:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// once dials inside the client's namespace (each attempt on its own locked
// thread, so attempts overlap) and reads the greeting.
func (p *prober) once() attempt {
	a := attempt{Start: time.Now()}
	a.Err = p.client.Do(func() error {
		c, err := net.DialTimeout("tcp4", p.addr, p.timeout)
		if err != nil {
			return err
		}
		a.Done = time.Now()
		defer c.Close()
		_ = c.SetReadDeadline(a.Done.Add(p.timeout))
		var b [1]byte
		if _, err := io.ReadFull(c, b[:]); err != nil {
			return err
		}
		a.From = int(b[0])
		return nil
	})
	return a
}

// stop ends the prober and waits for the attempts in flight (each bounded
// by the timeout).
func (p *prober) stop() {
	p.stopOnce.Do(func() { close(p.stopc) })
	p.wg.Wait()
}

// attempts returns a copy of the log so far.
func (p *prober) attempts() []attempt {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]attempt(nil), p.log...)
}

// waitFor polls the log (every 5 ms, until deadline) for an attempt that
// match accepts.
func (p *prober) waitFor(match func(attempt) bool, deadline time.Time) bool {
	for {
		for _, a := range p.attempts() {
			if match(a) {
				return true
			}
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond) // polling a log that other goroutines fill, bounded by deadline
	}
}

// first returns the attempt with the earliest Done among those match
// accepts.
func first(log []attempt, match func(attempt) bool) (attempt, bool) {
	var best attempt
	found := false
	for _, a := range log {
		if match(a) && (!found || a.Done.Before(best.Done)) {
			best, found = a, true
		}
	}
	return best, found
}

package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/vipstack/vipstack/internal/procfs"
)

// idleMemory opens n connections to impl's main frontend, sends one
// keep-alive GET on each and reads its answer, then leaves them open and
// idle and reads the balancer's resident and proportional set sizes
// (smaps_rollup of its process group) before the first connection and
// after the last answer. Every connection is closed before it returns,
// also on failure; each step is bounded.
func (b *bench) idleMemory(impl string, n int) (memResult, error) {
	b.mu.Lock()
	p := b.procs[impl]
	b.mu.Unlock()
	if p == nil {
		return memResult{}, fmt.Errorf("%s is not running", impl)
	}
	pids := procfs.Group(p.cmd.Process.Pid)
	if len(pids) == 0 {
		return memResult{}, fmt.Errorf("%s: no process in group %d", impl, p.cmd.Process.Pid)
	}
	m := memResult{Conns: n}
	addr := net.JoinHostPort(clientAddr(impl), strconv.Itoa(portsFor(impl).Main))
	// Both balancers serve a few requests before the first reading: the
	// figure is then what the connections hold, not the pages of code
	// and data a process maps in the first time it serves a request
	// (vipstack's binary is about 100 MB; cold, those pages were most of
	// the loop engine's growth, measured with smaps).
	time.Sleep(idleSettle)
	var warm []net.Conn
	err := b.h.Do(func() error {
		d := net.Dialer{Timeout: 5 * time.Second}
		for range idleWarmUp {
			c, err := d.Dial("tcp", addr)
			if err != nil {
				return fmt.Errorf("warm-up: %w", err)
			}
			warm = append(warm, c)
		}
		return nil
	})
	if err == nil {
		err = warmUp(warm)
	}
	for _, c := range warm {
		c.Close()
	}
	if err != nil {
		return m, err
	}
	time.Sleep(idleSettle)
	m.RSSBefore, m.PSSBefore = procfs.MemMiB(pids)
	m.AnonBefore = procfs.AnonMiB(pids)
	var maps0 map[string]mapUse
	if b.smaps {
		maps0 = smapsByMapping(pids)
	}

	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	deadline := time.Now().Add(2 * time.Minute)
	err = b.h.Do(func() error {
		d := net.Dialer{Timeout: 5 * time.Second}
		for range n {
			c, err := d.Dial("tcp", addr)
			if err != nil {
				return fmt.Errorf("connection %d of %d: %w", len(conns)+1, n, err)
			}
			_ = c.SetDeadline(deadline)
			conns = append(conns, c)
		}
		return nil
	})
	if err != nil {
		return m, err
	}

	// One GET on each, 64 at a time: every connection has been an HTTP
	// connection with a request and an answer, and is kept alive.
	work := make(chan net.Conn)
	errs := make(chan error, len(conns))
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for c := range work {
				if err := keepAliveGet(c, bufio.NewReaderSize(c, 1024)); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, c := range conns {
		work <- c
	}
	close(work)
	wg.Wait()
	close(errs)
	if err, failed := <-errs, len(errs)+1; err != nil {
		return m, fmt.Errorf("%d of %d keep-alive GETs failed, the first: %w", failed, n, err)
	}

	time.Sleep(idleSettle)
	m.RSSAfter, m.PSSAfter = procfs.MemMiB(pids)
	m.AnonAfter = procfs.AnonMiB(pids)
	if b.smaps {
		smapsGrowth(b.log, impl, maps0, smapsByMapping(pids))
	}
	return m, nil
}

// keepAliveGet sends GET / on c without Connection: close and reads, from
// r (c's reader, kept across requests on one connection), the
// whole answer, which must be a 200 that leaves the connection open.
func keepAliveGet(c net.Conn, r *bufio.Reader) error {
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: bench\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || resp.Close {
		return fmt.Errorf("status %d, close %v", resp.StatusCode, resp.Close)
	}
	return nil
}

// warmUp sends a GET on each of conns, 16 at a time, and closes them.
// The connections are opened by the caller in the namespace (a
// goroutine of its own would run on a thread outside it).
func warmUp(conns []net.Conn) error {
	work := make(chan net.Conn, len(conns))
	for _, c := range conns {
		work <- c
	}
	close(work)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for c := range work {
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				err := keepAliveGet(c, bufio.NewReaderSize(c, 1024))
				c.Close()
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("warm-up: %w", err)
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return first
}

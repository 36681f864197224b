package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"
)

// pacedLatency sends GET / to impl's main frontend at rate requests a
// second, spread over pacedConns keep-alive connections, for d: an open
// loop, where wrk's closed loop sends the next request when the last is
// answered and so measures latency at whatever rate a balancer sustains.
// Request i is due at start + i/rate on connection i mod pacedConns, and
// its latency runs from when it was due, not from when it left: a slow
// answer delays the connection's next requests, and that delay counts
// (no coordinated omission). Every step is bounded by d plus 10 s.
func (b *bench) pacedLatency(impl string, rate int, d time.Duration) (pacedResult, error) {
	addr := net.JoinHostPort(clientAddr(impl), strconv.Itoa(mainPort(impl)))
	conns := make([]net.Conn, 0, pacedConns)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	if err := b.h.Do(func() error {
		for range pacedConns {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				return err
			}
			conns = append(conns, c)
		}
		return nil
	}); err != nil {
		return pacedResult{}, err
	}
	cpu0, err := procCPU(os.Getpid())
	if err != nil {
		return pacedResult{}, err
	}
	total := int(d.Seconds() * float64(rate))
	interval := time.Second / time.Duration(rate)
	start := time.Now().Add(100 * time.Millisecond)
	deadline := start.Add(d + 10*time.Second)
	lat := make([][]time.Duration, len(conns))
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for k, c := range conns {
		_ = c.SetDeadline(deadline)
		wg.Go(func() {
			r := bufio.NewReaderSize(c, 4096)
			for i := k; i < total; i += len(conns) {
				due := start.Add(time.Duration(i) * interval)
				time.Sleep(time.Until(due))
				_, err := c.Write(pacedRequest)
				if err == nil {
					err = readAnswer(r)
				}
				if err != nil {
					errs[k] = fmt.Errorf("request %d of %d: %w", i+1, total, err)
					return
				}
				lat[k] = append(lat[k], time.Since(due))
			}
		})
	}
	wg.Wait()
	var all []time.Duration
	for k := range conns {
		if errs[k] != nil {
			return pacedResult{}, errs[k]
		}
		all = append(all, lat[k]...)
	}
	res := summarizePaced(all, rate)
	cpu1, err := procCPU(os.Getpid())
	if err != nil {
		return pacedResult{}, err
	}
	if len(all) > 0 {
		res.ClientCPU = (cpu1 - cpu0) / time.Duration(len(all))
	}
	return res, nil
}

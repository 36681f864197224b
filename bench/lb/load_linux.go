package main

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// dialers is how many goroutines open the load's connections, each on a
// thread inside the namespace (a socket belongs to the namespace of the
// thread that creates it). Several, so one slow connect does not hold up
// the schedule.
const dialers = 8

// load opens rate new connections per second to addr for d, each carrying
// one GET / with Connection: close, calls event once at, and returns what
// happened. Every request is bounded by requestDeadline.
func (b *bench) load(addr string, rate int, d, at time.Duration, event func()) killResult {
	n := int(float64(rate) * d.Seconds())
	interval := time.Second / time.Duration(rate)
	type outcome struct {
		kind    string        // "" when answered
		latency time.Duration // from the connect to the end of the answer
		at      time.Duration // when the request started, from the start of the load
	}
	outcomes := make([]outcome, n)
	type slot struct {
		i     int
		start time.Time
	}
	slots := make(chan slot)
	var start time.Time // set before the first slot is sent, read after
	var wg sync.WaitGroup
	serve := func(s slot, c net.Conn) {
		defer wg.Done()
		defer c.Close()
		_ = c.SetDeadline(s.start.Add(requestDeadline))
		code, body, err := request(c, "/")
		switch {
		case err != nil:
			outcomes[s.i].kind = classify(err)
		case code != http.StatusOK:
			outcomes[s.i].kind = "status " + strconv.Itoa(code)
		case !strings.HasPrefix(body, "b"):
			outcomes[s.i].kind = "wrong body"
		}
		outcomes[s.i].latency = time.Since(s.start)
		outcomes[s.i].at = s.start.Sub(start)
	}
	var dw sync.WaitGroup
	for range dialers {
		dw.Add(1)
		go func() {
			defer dw.Done()
			err := b.h.Do(func() error {
				dl := net.Dialer{Timeout: 2 * time.Second}
				for s := range slots {
					c, err := dl.Dial("tcp", addr)
					if err != nil {
						outcomes[s.i] = outcome{kind: "connect: " + classify(err), latency: time.Since(s.start), at: s.start.Sub(start)}
						wg.Done()
						continue
					}
					go serve(s, c)
				}
				return nil
			})
			if err != nil { // could not enter the namespace: keep the schedule moving, count them all as failed
				for s := range slots {
					outcomes[s.i] = outcome{kind: "enter namespace: " + err.Error(), at: s.start.Sub(start)}
					wg.Done()
				}
			}
		}()
	}

	// killedAt is when the signal was sent, diedAt when the process was
	// gone: in between its kernel still completes connections to it.
	var killedAt, diedAt time.Duration
	killed := make(chan struct{})
	start = time.Now()
	t := time.AfterFunc(at, func() {
		killedAt = time.Since(start)
		event()
		diedAt = time.Since(start)
		close(killed)
	})
	var last time.Time
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
		wg.Add(1)
		last = time.Now()
		slots <- slot{i: i, start: last}
	}
	close(slots)
	dw.Wait()
	wg.Wait()
	if t.Stop() {
		close(killed) // the load ended first: -kill-at is checked against -kill-for, so this is not expected
	}
	<-killed

	k := killResult{Sent: n, Kinds: map[string]int{}, KilledAt: killedAt}
	if span := last.Sub(start); span > 0 {
		k.Rate = float64(n-1) / span.Seconds()
	}
	for _, o := range outcomes {
		if o.kind != "" && o.at < diedAt && o.at+o.latency >= killedAt {
			// Its backend died under it: no balancer can save a request
			// already sent, so it is counted apart. A request that started
			// after the signal but before the process was gone may have
			// been accepted by the dying process's socket and sent there.
			k.InFlight++
			k.Kinds["in flight at the kill: "+o.kind]++
			continue
		}
		if o.kind != "" {
			if k.Failed == 0 || o.at < k.FirstFail {
				k.FirstFail = o.at
			}
			k.LastFail = max(k.LastFail, o.at)
			k.Failed++
			k.Kinds[o.kind]++
			continue
		}
		if o.latency > slowAnswer {
			k.Slow++
		}
		k.Slowest = max(k.Slowest, o.latency)
	}
	return k
}

// classify names a request error for the report.
func classify(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "closed without an answer"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "no answer within " + requestDeadline.String()
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return err.Error()
}

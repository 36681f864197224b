package nodelab

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"time"

	"github.com/vishvananda/netns"
)

// forwarder accepts TCP connections in one network namespace and relays
// each to a target in this process's own (the API server on loopback).
type forwarder struct {
	ln    net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// forward listens on addr inside the named namespace and relays to target.
func forward(ns string, addr netip.AddrPort, target string) (*forwarder, error) {
	ln, err := listenIn(ns, addr.String())
	if err != nil {
		return nil, err
	}
	f := &forwarder{ln: ln, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				f.relay(c, target)
			}()
		}
	}()
	return f, nil
}

func (f *forwarder) track(c net.Conn, add bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conns == nil {
		return false // closed
	}
	if add {
		f.conns[c] = struct{}{}
	} else {
		delete(f.conns, c)
	}
	return true
}

func (f *forwarder) relay(c net.Conn, target string) {
	defer c.Close()
	up, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	if !f.track(c, true) || !f.track(up, true) {
		return
	}
	defer f.track(c, false)
	defer f.track(up, false)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done // either side closing ends both
}

// close stops accepting, closes every relayed connection and waits for
// the relays to end.
func (f *forwarder) close() {
	f.ln.Close()
	f.mu.Lock()
	for c := range f.conns {
		c.Close()
	}
	f.conns = nil
	f.mu.Unlock()
	f.wg.Wait()
}

// listenIn opens a TCP listener inside the named network namespace.
func listenIn(ns, addr string) (net.Listener, error) {
	type result struct {
		ln  net.Listener
		err error
	}
	res := make(chan result, 1)
	go func() {
		// The thread is not unlocked if it cannot go back: the runtime then
		// retires it with this goroutine.
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			res <- result{err: err}
			return
		}
		defer orig.Close()
		target, err := netns.GetFromName(ns)
		if err != nil {
			res <- result{err: fmt.Errorf("open netns %s: %w", ns, err)}
			return
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			res <- result{err: fmt.Errorf("enter netns %s: %w", ns, err)}
			return
		}
		ln, err := net.Listen("tcp", addr)
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
		if err != nil {
			err = fmt.Errorf("listen on %s in %s: %w", addr, ns, err)
		}
		res <- result{ln, err}
	}()
	r := <-res
	return r.ln, r.err
}

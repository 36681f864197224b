package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vipstack/vipstack/internal/testnet"
)

const (
	lbPort      = 8000
	lbMetrics   = "127.0.0.1:9652"
	backendBase = 9001 // backends b1..b3 on 9001..9003, on the lb's loopback
)

// lbConfig is the lb's haproxy.cfg: one TCP frontend on the host's
// address, backends b1 and b2 (and b3 when three) checked every second.
func lbConfig(front string, servers int) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("defaults")
	w("  mode tcp")
	w("  retries 3")
	w("  option redispatch")
	w("  timeout connect 5s")
	w("  timeout client 30s")
	w("  timeout server 30s")
	w("frontend main")
	w("  bind %s:%d", front, lbPort)
	w("  default_backend app")
	w("backend app")
	w("  balance roundrobin")
	for i := 1; i <= servers; i++ {
		w("  server b%d 127.0.0.1:%d check inter 1s fall 2 rise 2", i, backendBase+i-1)
	}
	return b.String()
}

// echo is a backend: it answers each line with the same line.
type echo struct {
	h    *testnet.Host
	port int
	mu   sync.Mutex
	ln   net.Listener
}

func (e *echo) set(up bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !up {
		if e.ln != nil {
			e.ln.Close()
			e.ln = nil
		}
		return nil
	}
	if e.ln != nil {
		return nil
	}
	var ln net.Listener
	if err := e.h.Do(func() (err error) { ln, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", e.port)); return err }); err != nil {
		return err
	}
	e.ln = ln
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return nil
}

// load opens o.Rate new connections a second to the lb from the client
// namespace, each sending a line and reading it back.
type load struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	lastErr    string
}

func (l *load) run(ctx context.Context, client *testnet.Host, addr string, rate int) {
	dial := dialer(client)
	t := time.NewTicker(time.Second / time.Duration(rate))
	defer t.Stop()
	sem := make(chan struct{}, 64) // bounded: at most 64 connections open at once
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		select {
		case sem <- struct{}{}:
		default:
			l.fail(errors.New("64 connections still open: skipped one"))
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := l.one(ctx, dial, addr); err != nil {
				if ctx.Err() == nil {
					l.fail(err)
				}
				return
			}
			l.ok.Add(1)
		})
	}
}

func (l *load) fail(err error) {
	l.failed.Add(1)
	l.mu.Lock()
	l.lastErr = err.Error()
	l.mu.Unlock()
}

func (l *load) one(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error), addr string) error {
	c, err := dial(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	msg := []byte("soak\n")
	if _, err := c.Write(msg); err != nil {
		return err
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		return fmt.Errorf("read the echo: %w", err)
	}
	return nil
}

// startLB runs `vipstack lb` in a namespace with two echo backends on its
// loopback, under o.Rate new connections a second from a client
// namespace, and samples it.
func startLB(ctx context.Context, o options) (*part, error) {
	topo, err := testnet.Build(testnet.Options{Hosts: 1, Client: true, Prefix: o.Prefix + "l"})
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "vsok-lb-")
	if err != nil {
		topo.Close()
		return nil, err
	}
	h := topo.Hosts[0]
	var backends []*echo
	var pid int
	lctx, stopLoad := context.WithCancel(context.Background())
	var ld load
	loadDone := make(chan struct{})
	p := &part{Name: "lb", Close: func() {
		stopLoad()
		<-loadDone
		if pid != 0 {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		for _, b := range backends {
			_ = b.set(false)
		}
		topo.Close()
		os.RemoveAll(work)
	}}
	fail := func(err error) (*part, error) {
		close(loadDone)
		p.Close()
		return nil, err
	}
	for i := range 3 {
		b := &echo{h: h, port: backendBase + i}
		backends = append(backends, b)
		if err := b.set(true); err != nil {
			return fail(err)
		}
	}
	front := h.IPv4.Addr().String()
	cfg := filepath.Join(work, "haproxy.cfg")
	write := func(servers int) error {
		tmp := cfg + ".tmp"
		if err := os.WriteFile(tmp, []byte(lbConfig(front, servers)), 0o644); err != nil {
			return err
		}
		return os.Rename(tmp, cfg)
	}
	if err := write(2); err != nil {
		return fail(err)
	}
	cmd := h.Command(o.Bin, "lb", "-f", cfg, "--metrics-addr", lbMetrics)
	logf, err := os.Create(filepath.Join(work, "lb.log"))
	if err != nil {
		return fail(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	err = h.Start(cmd)
	logf.Close()
	if err != nil {
		return fail(err)
	}
	pid = cmd.Process.Pid
	go func() { _ = cmd.Wait() }()
	addr := net.JoinHostPort(front, fmt.Sprint(lbPort))
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := ld.one(ctx, dialer(topo.Client), addr)
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			log, _ := os.ReadFile(filepath.Join(work, "lb.log"))
			return fail(fmt.Errorf("the lb does not pass a connection after 30 s: %v\n%s", err, log))
		}
		time.Sleep(200 * time.Millisecond)
	}
	go func() {
		defer close(loadDone)
		ld.run(lctx, topo.Client, addr, o.Rate)
	}()
	p.Subjects = []subject{{Part: p.Name, Name: "vipstack lb", pid: func() int { return pid },
		metrics: func(ctx context.Context) (string, error) {
			return httpGet(ctx, dialer(h), "http://"+lbMetrics+"/metrics")
		}}}
	p.Steps = []step{
		{"SIGHUP", func(context.Context) error { return syscall.Kill(pid, syscall.SIGHUP) }},
		{"server b3 added (config edit)", func(context.Context) error { return write(3) }},
		{"backend b2 stopped", func(context.Context) error { return backends[1].set(false) }},
		{"backend b2 started", func(context.Context) error { return backends[1].set(true) }},
		{"server b3 removed (config edit)", func(context.Context) error { return write(2) }},
	}
	p.Notes = func() []string {
		ld.mu.Lock()
		defer ld.mu.Unlock()
		s := fmt.Sprintf("lb load: %d connections passed, %d failed", ld.ok.Load(), ld.failed.Load())
		if ld.lastErr != "" {
			s += " (last error: " + ld.lastErr + ")"
		}
		return []string{s}
	}
	p.Problems = func() []string {
		if ld.ok.Load() == 0 {
			return []string{"lb: no connection passed during the soak"}
		}
		return nil
	}
	return p, nil
}

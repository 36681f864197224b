package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vipstack/vipstack/internal/bgp"
)

// The bench runs its own binary as a helper inside a namespace (a whole
// process there, as GoBGP and the prober dial from goroutines of their
// own). roleEnv names the helper and configEnv carries its JSON settings.
const (
	roleEnv   = "VBGP_BENCH_ROLE"
	configEnv = "VBGP_BENCH_CONFIG"
)

// helperMain runs the helper named by roleEnv and returns its exit code,
// or -1 when this process is not a helper.
func helperMain() int {
	raw := os.Getenv(configEnv)
	switch os.Getenv(roleEnv) {
	case "speaker":
		return speakerHelper(raw)
	case "greet":
		return greetHelper(raw)
	case "probe":
		return probeHelper(raw)
	}
	return -1
}

// allEligible is an Eligibility with every route eligible from the start:
// the bench measures the speaker, not the checks.
type allEligible struct{ vs []bgp.Verdict }

func (e allEligible) Verdicts() []bgp.Verdict { return e.vs }
func (allEligible) Changed() <-chan struct{}  { return nil }

// speakerHelper runs vipstack's speaker (internal/bgp, as `vipstack node`
// runs it) until SIGTERM, which is its graceful stop.
// Its configuration is a file, "@path": 10,000 routes are too long for
// the environment.
func speakerHelper(raw string) int {
	var cfg bgp.Config
	b, err := os.ReadFile(strings.TrimPrefix(raw, "@"))
	if err == nil {
		err = json.Unmarshal(b, &cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var e allEligible
	for _, r := range cfg.Routes {
		e.vs = append(e.vs, bgp.Verdict{VIP: r.VIP, Eligible: true, Reason: "bench"})
	}
	s, err := bgp.New(bgp.Options{Config: cfg, Eligibility: e, Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := s.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("run", "err", err)
		return 1
	}
	log.Info("speaker stopped")
	return 0
}

// greetHelper answers every connection on port greetPort with the node's
// name and closes it.
func greetHelper(name string) int {
	ln, err := net.Listen("tcp", fmt.Sprintf(":%d", greetPort))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		go func() {
			_, _ = io.WriteString(c, name)
			c.Close()
		}()
	}
}

// probeConfig is the prober's: a new connection to Target every Every,
// each given Timeout to be answered.
type probeConfig struct {
	Target  netip.AddrPort
	Every   time.Duration
	Timeout time.Duration
}

// probeHelper opens a connection every Every until its stdin closes, and
// writes one JSON line per connection as it finishes. At most
// Timeout/Every connections are open at once: the load is bounded.
func probeHelper(raw string) int {
	var pc probeConfig
	if err := json.Unmarshal([]byte(raw), &pc); err != nil || pc.Every <= 0 || pc.Timeout <= 0 {
		fmt.Fprintln(os.Stderr, "probe config:", raw, err)
		return 2
	}
	stop := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(stop) }()
	var mu sync.Mutex
	var wg sync.WaitGroup
	tick := time.NewTicker(pc.Every)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			wg.Wait()
			return 0
		case <-tick.C:
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := probe{At: time.Now().UnixNano()}
			if c, err := net.DialTimeout("tcp", pc.Target.String(), pc.Timeout); err == nil {
				_ = c.SetDeadline(time.Unix(0, p.At).Add(pc.Timeout))
				b, err := io.ReadAll(c)
				c.Close()
				if err == nil {
					p.By = string(b)
				}
			}
			line, _ := json.Marshal(p)
			mu.Lock()
			_, _ = os.Stdout.Write(append(line, '\n'))
			mu.Unlock()
		}()
	}
}

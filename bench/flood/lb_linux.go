package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// Loopback ports in the LB namespace.
const (
	lbBackendPort = 9000
	statsAuth     = "flood:flood"
)

// lbPorts returns a balancer's frontend and stats ports: different for
// each, so the second run does not meet the first one's TIME_WAIT.
func lbPorts(impl string) (fe, stats int) {
	if impl == implHAProxy {
		return 9445, 9448
	}
	return 9545, 9548
}

// lbConfig is the haproxy.cfg both balancers run: frontend maxconn
// maxconn, global maxconn global (above it, so that haproxy, whose global
// limit counts every listener, still answers its stats page when the
// frontend is full).
func lbConfig(fe, stats, maxconn, global int) string {
	return fmt.Sprintf(`global
  maxconn %[6]d
defaults
  mode    tcp
  maxconn %[3]d
  retries 3
  timeout connect 5s
  timeout client  1h
  timeout server  1h
  timeout queue   1m
frontend main
  bind 127.0.0.1:%[1]d
  default_backend be
listen stats
  bind 127.0.0.1:%[2]d
  mode http
  stats enable
  stats uri /stats
  stats auth %[4]s
backend be
  balance roundrobin
  server b1 127.0.0.1:%[5]d
`, fe, stats, maxconn, statsAuth, lbBackendPort, global)
}

// httpGetIn does a GET inside h's namespace (optionally with basic auth
// "user:password") and returns the body of a 200 answer.
func httpGetIn(h *testnet.Host, addr, path string, auth ...string) (string, error) {
	tr := &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
			var c net.Conn
			err := h.Do(func() (err error) {
				c, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, a)
				return err
			})
			return c, err
		},
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return "", err
	}
	if len(auth) > 0 {
		user, pass, _ := strings.Cut(auth[0], ":")
		req.SetBasicAuth(user, pass)
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s%s: %s", addr, path, resp.Status)
	}
	return string(body), nil
}

// slowBackend greets every connection and reads until end of file.
type slowBackend struct {
	ln    net.Listener
	mu    sync.Mutex
	conns map[net.Conn]bool
}

func startSlowBackend(h *testnet.Host) (*slowBackend, error) {
	s := &slowBackend{conns: map[net.Conn]bool{}}
	if err := h.Do(func() (err error) {
		s.ln, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", lbBackendPort))
		return err
	}); err != nil {
		return nil, err
	}
	go func() {
		for {
			c, err := s.ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns[c] = true
			s.mu.Unlock()
			go func() {
				defer func() {
					s.mu.Lock()
					delete(s.conns, c)
					s.mu.Unlock()
					c.Close()
				}()
				if _, err := io.WriteString(c, "b\n"); err != nil {
					return
				}
				var buf [64]byte
				for {
					if _, err := c.Read(buf[:]); err != nil {
						return
					}
				}
			}()
		}
	}()
	return s, nil
}

func (s *slowBackend) close() {
	s.ln.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}

// lb runs the slow clients against haproxy, then vipstack.
func (b *bench) lb(o options) ([]lbFigures, error) {
	b.say("lb: building a namespace")
	topo, err := b.topology(testnet.Options{Hosts: 1, Prefix: "vf"})
	if err != nil {
		return nil, err
	}
	h := topo.Hosts[0]
	if _, err := h.Run("sysctl", "-qw", "net.ipv4.ip_local_port_range=10000 65000", "net.core.somaxconn=16384"); err != nil {
		return nil, err
	}
	be, err := startSlowBackend(h)
	if err != nil {
		return nil, err
	}
	defer be.close()
	var figs []lbFigures
	for _, impl := range []string{implHAProxy, implVipstack} {
		f, err := b.lbOne(o, impl, h)
		if err != nil {
			return figs, fmt.Errorf("%s: %w", impl, err)
		}
		figs = append(figs, f)
	}
	return figs, nil
}

func (b *bench) lbOne(o options, impl string, h *testnet.Host) (lbFigures, error) {
	f := lbFigures{Impl: impl}
	fePort, statsPort := lbPorts(impl)
	dir := filepath.Join(b.work, "lb-"+impl)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return f, err
	}
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(lbConfig(fePort, statsPort, o.lbMaxconn, o.lbGlobal)), 0o644); err != nil {
		return f, err
	}
	cmd := h.Command(b.bin, "lb", "-f", path, "--watch-interval", "0")
	if impl == implHAProxy {
		cmd = h.Command("haproxy", "-db", "-f", path)
	}
	n, err := peers.StartCmd(h, cmd)
	if err != nil {
		return f, err
	}
	b.atClose(func() {
		if n.Alive() {
			n.Kill()
		}
	})
	defer n.Kill()
	statsAddr := fmt.Sprintf("127.0.0.1:%d", statsPort)
	stats := func() (frontendRow, error) {
		text, err := httpGetIn(h, statsAddr, "/stats;csv", statsAuth)
		if err != nil {
			return frontendRow{}, err
		}
		return parseStatsCSV(text, "main")
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := stats(); err == nil {
			break
		} else if time.Now().After(deadline) || !n.Alive() {
			return f, fmt.Errorf("%s did not serve its stats page: %v\n%s", impl, err, tailLog(n.Log()))
		}
		time.Sleep(100 * time.Millisecond) // polling the process
	}
	time.Sleep(time.Second) // settle before the idle figure
	if f.BaseRSS, _, err = groupMemory(n.Pid()); err != nil {
		return f, err
	}

	b.say("lb: %s: opening %d slow connections (maxconn %d)", impl, o.lbConns, o.lbMaxconn)
	conns := make([]net.Conn, o.lbConns)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	var dialErrs atomic.Int64
	var firstErr atomic.Value
	// Each dialer runs on a thread switched into the namespace (goroutines
	// it would start would not be); the sockets stay there.
	var wg sync.WaitGroup
	const dialers = 64
	for w := range dialers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := h.Do(func() error {
				for i := w; i < o.lbConns; i += dialers {
					c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", fePort), 30*time.Second)
					if err != nil {
						dialErrs.Add(1)
						firstErr.CompareAndSwap(nil, err)
						continue
					}
					conns[i] = c
				}
				return nil
			})
			if err != nil {
				dialErrs.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
		}()
	}
	wg.Wait()
	if e := dialErrs.Load(); e > 0 {
		return f, fmt.Errorf("%d of %d connections failed, first: %v", e, o.lbConns, firstErr.Load())
	}
	f.Conns = o.lbConns

	// Every second client trickles a byte a second; the others never send.
	for s := 0; s < o.lbTrickle; s++ {
		for i, c := range conns {
			if i%2 == 0 {
				if _, err := c.Write([]byte{'.'}); err != nil {
					return f, fmt.Errorf("trickle, client %d: %w", i, err)
				}
				f.TrickledBytesOut++
			}
		}
		time.Sleep(time.Second) // the trickle's pace
	}
	// Who got the backend's greeting: admitted clients.
	for _, c := range conns {
		if greeted(c.(*net.TCPConn)) {
			f.Admitted++
		}
	}
	if f.RSS, f.HWM, err = groupMemory(n.Pid()); err != nil {
		return f, err
	}
	if f.Stats, err = stats(); err != nil {
		return f, err
	}
	b.say("lb: %s: %d greeted, RSS %s MiB", impl, f.Admitted, mib(f.RSS))
	return f, nil
}

// greeted reports, without blocking or consuming it, whether the backend's
// greeting is waiting on c.
func greeted(c *net.TCPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	n := 0
	rc.Control(func(fd uintptr) {
		var b [2]byte
		n, _, _ = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	})
	return n == 2
}

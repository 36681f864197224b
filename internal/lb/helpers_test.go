package lb

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/lbconfig"
	"github.com/vipstack/vipstack/internal/testutil"
)

// bound is how long a test waits for something that should happen at
// once (a connection, a probe over loopback) before failing: a guard
// against hangs, never a timing assertion.
const bound = 10 * time.Second

// backend is a loopback TCP server that greets each client with its name
// and a newline, then echoes until the client half-closes, then closes.
type backend struct {
	name string
	ln   net.Listener
	addr netip.AddrPort
	wg   sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]bool

	handle func(net.Conn) // nil: greetAndEcho
}

// greetAndEcho is a backend's default: its name and a newline, then an
// echo of everything until the client closes.
func (b *backend) greetAndEcho(c net.Conn) {
	if _, err := io.WriteString(c, b.name+"\n"); err != nil {
		return
	}
	io.Copy(c, c)
}

func startBackend(t *testing.T, name string) *backend {
	t.Helper()
	return startBackendFunc(t, name, nil)
}

// startBackendFunc is a loopback backend that runs handle (nil:
// greetAndEcho) on each connection, and closes it when handle returns.
func startBackendFunc(t *testing.T, name string, handle func(net.Conn)) *backend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &backend{name: name, ln: ln, addr: netip.MustParseAddrPort(ln.Addr().String()), conns: map[net.Conn]bool{}, handle: handle}
	b.serve()
	t.Cleanup(b.stop)
	return b
}

func (b *backend) serve() {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			c, err := b.ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.conns[c] = true
			b.mu.Unlock()
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				defer func() {
					b.mu.Lock()
					delete(b.conns, c)
					b.mu.Unlock()
					c.Close()
				}()
				if b.handle != nil {
					b.handle(c)
				} else {
					b.greetAndEcho(c)
				}
			}()
		}
	}()
}

// stop closes the listener and every connection.
func (b *backend) stop() {
	b.ln.Close()
	b.mu.Lock()
	for c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// closedPort returns a loopback address where connects are refused: a
// socket bound to the port without listening, held for the test, so that
// no other socket (the LB's own port-0 frontend, say) can take the port
// as a stopped backend's freed port could be.
func closedPort(t *testing.T) netip.AddrPort {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	// SO_REUSEADDR, as Go's listeners have, lets restart listen on the
	// port while this socket holds it.
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(sa.(*unix.SockaddrInet4).Port))
}

// deadBackend is a backend whose port refuses connections (closedPort)
// until restart.
func deadBackend(t *testing.T, name string) *backend {
	b := &backend{name: name, addr: closedPort(t), conns: map[net.Conn]bool{}}
	t.Cleanup(func() {
		if b.ln != nil {
			b.stop()
		}
	})
	return b
}

// restart listens again on the same port.
func (b *backend) restart(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", b.addr.String())
	if err != nil {
		t.Fatal(err)
	}
	b.ln = ln
	b.serve()
}

func loopbackBind() lbconfig.Bind {
	return lbconfig.Bind{Addr: netip.MustParseAddrPort("127.0.0.1:0")}
}

// widenableBind is a loopback bind on a port no socket uses on any IPv4
// address when it is picked, so a test can later widen it to 0.0.0.0.
// A port the kernel picks for 127.0.0.1:0 may be in use on the host's
// other addresses (a CI machine's own connections): widening then fails
// for a reason outside the LB (seen in CI: TestRebindWidensOwnPort).
func widenableBind(t *testing.T) lbconfig.Bind {
	t.Helper()
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	port := addrPort(t, ln.Addr()).Port()
	ln.Close()
	return lbconfig.Bind{Addr: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)}
}

// parseOnLoopback reads a haproxy.cfg text (as the haproxy comparison
// tests write them) and moves every frontend, monitor and stats section's
// binds to loopback ports of the kernel's choosing, so vipstack runs
// beside a haproxy on the text's own ports.
func parseOnLoopback(t *testing.T, text string) *lbconfig.Config {
	t.Helper()
	cfg, err := haproxycfg.Parse("haproxy.cfg", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	for i := range cfg.Frontends {
		cfg.Frontends[i].Binds = []lbconfig.Bind{loopbackBind()}
	}
	for i := range cfg.Monitors {
		cfg.Monitors[i].Binds = []lbconfig.Bind{loopbackBind()}
	}
	for i := range cfg.Stats {
		cfg.Stats[i].Binds = []lbconfig.Bind{loopbackBind()}
	}
	return cfg
}

// tcpConfig is one frontend "fe" on a loopback port to backend "be".
func tcpConfig(balance lbconfig.Balance, servers ...lbconfig.Server) *lbconfig.Config {
	return &lbconfig.Config{
		Retries:   3,
		Timeouts:  lbconfig.Timeouts{Connect: 5 * time.Second},
		Frontends: []lbconfig.Frontend{{Name: "fe", Binds: []lbconfig.Bind{loopbackBind()}, Backend: "be"}},
		Backends:  []lbconfig.Backend{{Name: "be", Balance: balance, Servers: servers}},
	}
}

func srv(name string, b *backend) lbconfig.Server {
	return lbconfig.Server{Name: name, Addr: b.addr, Weight: 1}
}

func newLB(t *testing.T, clk clock.Clock, cfg *lbconfig.Config) *LB {
	t.Helper()
	return newLBOpts(t, Options{Clock: clk}, cfg)
}

// newLBOpts is newLB with options of the test's own.
func newLBOpts(t *testing.T, opts Options, cfg *lbconfig.Config) *LB {
	t.Helper()
	l, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		l.Shutdown(ctx)
	})
	return l
}

func fakeClock() *clock.Fake { return clock.NewFake(time.Unix(1_700_000_000, 0)) }

// client is a connection through the LB.
type client struct {
	*net.TCPConn
	r *bufio.Reader
}

func dial(t *testing.T, l *LB, section string) *client {
	t.Helper()
	addrs := l.Addrs(section)
	if len(addrs) == 0 {
		t.Fatalf("section %q listens nowhere", section)
	}
	c, err := net.DialTimeout("tcp", addrs[0].String(), bound)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(bound))
	return &client{TCPConn: c.(*net.TCPConn), r: bufio.NewReader(c)}
}

// greeting reads the backend's name, or "" if the connection ends first.
func (c *client) greeting(t *testing.T) string {
	t.Helper()
	line, err := c.r.ReadString('\n')
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(line, "\n")
}

// echo sends a line and reads it back.
func (c *client) echo(t *testing.T, msg string) {
	t.Helper()
	if _, err := io.WriteString(c, msg+"\n"); err != nil {
		t.Fatalf("write: %v", err)
	}
	got, err := c.r.ReadString('\n')
	if err != nil || got != msg+"\n" {
		t.Fatalf("echo %q: got %q, %v", msg, got, err)
	}
}

// closed reports whether the peer closed the connection (read returns EOF
// or a reset) rather than sending data.
func (c *client) closed(t *testing.T) bool {
	t.Helper()
	b, err := c.r.ReadByte()
	if err == nil {
		t.Logf("read %q instead of the end of the connection", b)
		return false
	}
	return err == io.EOF || strings.Contains(err.Error(), "reset")
}

// eventually waits until cond holds; I/O-driven conditions only.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	// Every millisecond: some conditions (a connection queued, a check
	// in flight) last only a little longer.
	if err := testutil.PollEvery(context.Background(), time.Millisecond, bound, func() error {
		if cond() {
			return nil
		}
		return fmt.Errorf("waiting for %s", what)
	}); err != nil {
		t.Fatal(err)
	}
}

func (l *LB) serverStats(t *testing.T, backend, name string) stats.ServerStats {
	t.Helper()
	for _, b := range l.Snapshot().Backends {
		if b.Name != backend {
			continue
		}
		for _, s := range b.Servers {
			if s.Name == name {
				return s
			}
		}
	}
	t.Fatalf("no server %s/%s", backend, name)
	return stats.ServerStats{}
}

func addrPort(t *testing.T, a net.Addr) netip.AddrPort {
	t.Helper()
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		t.Fatal(err)
	}
	return ap
}

func itoa(i int) string { return strconv.Itoa(i) }

func newReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }

// canceled is a context that is already done: Shutdown closes everything
// at once.
func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// serverFor returns the running server name of backend.
func (l *LB) serverFor(t *testing.T, backend, name string) *server {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.servers {
		if s.backend == backend && s.name == name {
			return s
		}
	}
	t.Fatalf("no server %s/%s", backend, name)
	return nil
}

// onFD runs f on c's descriptor and fails the test, naming what, if it
// fails.
func onFD(t *testing.T, c *net.TCPConn, what string, f func(fd int) error) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		t.Fatal(err)
	}
	if ferr != nil {
		t.Fatalf("%s: %v", what, ferr)
	}
}

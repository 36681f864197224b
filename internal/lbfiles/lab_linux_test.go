//go:build linux

package lbfiles

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// bound is how long a balancer may take to start, or its checks to see a
// server change state (the files' own check intervals are up to 10 s,
// fall 2).
const bound = 45 * time.Second

// lab is one topology: haproxy on Hosts[0], `vipstack lb` on Hosts[1], the
// backends on Hosts[2:] and the client. Both balancers run the same file,
// each with its own address and paths put in.
type lab struct {
	t      *testing.T
	topo   *testnet.Topology
	lbs    []*balancer
	backs  []*testnet.Host
	client *testnet.Host
}

// balancer is haproxy or `vipstack lb` running a file.
type balancer struct {
	Name string // "haproxy" or "vipstack"
	Host *testnet.Host
	Dir  string // a directory of its own, for its sockets and pid file
	out  *syncbuf.Buffer
}

// IP is the balancer's address on the test network.
func (b *balancer) IP() string { return b.Host.IPv4.Addr().String() }

func newLab(t *testing.T, backends int) *lab {
	t.Helper()
	testnet.RequireRoot(t)
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	topo := testnet.New(t, testnet.Options{Hosts: 2 + backends, Client: true, Prefix: "vlf"})
	l := &lab{t: t, topo: topo, backs: topo.Hosts[2:], client: topo.Client}
	for i, name := range []string{"haproxy", "vipstack"} {
		l.lbs = append(l.lbs, &balancer{Name: name, Host: topo.Hosts[i], Dir: t.TempDir(), out: &syncbuf.Buffer{}})
	}
	return l
}

// backIP is backend i's address.
func (l *lab) backIP(i int) string { return l.backs[i].IPv4.Addr().String() }

// start runs file from testdata under both balancers, with the strings
// vars gives for each balancer replaced, and waits until each answers on
// port.
func (l *lab) start(bin, file string, port int, vars func(b *balancer) []string) {
	l.t.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		l.t.Fatal(err)
	}
	for _, b := range l.lbs {
		path := filepath.Join(b.Dir, "haproxy.cfg")
		if err := os.WriteFile(path, []byte(strings.NewReplacer(vars(b)...).Replace(string(text))), 0o644); err != nil {
			l.t.Fatal(err)
		}
		cmd := b.Host.Command("haproxy", "-db", "-f", path)
		if b.Name == "vipstack" {
			cmd = b.Host.Command(bin, "lb", "-f", path)
		}
		cmd.Stdout, cmd.Stderr = b.out, b.out
		if err := b.Host.Start(cmd); err != nil {
			l.t.Fatal(err)
		}
		l.t.Cleanup(func() {
			if l.t.Failed() {
				l.t.Logf("---- %s wrote:\n%s", b.Name, testutil.Tail(b.out.String(), 40))
			}
		})
	}
	for _, b := range l.lbs {
		addr := net.JoinHostPort(b.IP(), fmt.Sprint(port))
		testutil.Eventually(l.t, bound, func() error {
			return l.client.Do(func() error {
				c, err := net.DialTimeout("tcp", addr, time.Second)
				if err == nil {
					c.Close()
				}
				return err
			})
		})
	}
}

// hosts makes names resolve to addresses in the namespaces of both
// balancers: `ip netns exec` mounts /etc/netns/NAME/hosts over /etc/hosts.
func (l *lab) hosts(lines string) {
	l.t.Helper()
	for _, b := range l.lbs {
		dir := filepath.Join("/etc/netns", b.Host.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			l.t.Fatal(err)
		}
		l.t.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.WriteFile(filepath.Join(dir, "hosts"), []byte("127.0.0.1 localhost\n"+lines), 0o644); err != nil {
			l.t.Fatal(err)
		}
	}
}

// server is a backend that says its name: a connection that sends
// "HELLO\n" gets the name and is held open until the client closes it; a
// GET request (a health check) gets an HTTP/1.0 status line.
type server struct {
	name    string
	sick    atomic.Bool  // close every connection at once
	status  atomic.Int32 // the status a GET gets, but for Patroni's paths
	primary atomic.Bool  // Patroni: GET /primary is 200, /replica 503
}

func newServer(name string) *server {
	s := &server{name: name}
	s.status.Store(200)
	return s
}

// serve runs s on addr in h's namespace, over TLS when cfg is not nil.
func (l *lab) serve(h *testnet.Host, addr string, s *server, cfg *tls.Config) {
	l.t.Helper()
	ln := l.listen(h, addr)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.handle(c, cfg)
		}
	}()
}

func (l *lab) listen(h *testnet.Host, addr string) net.Listener {
	l.t.Helper()
	var ln net.Listener
	if err := h.Do(func() (err error) { ln, err = net.Listen("tcp", addr); return err }); err != nil {
		l.t.Fatalf("listen on %s in %s: %v", addr, h.Name, err)
	}
	l.t.Cleanup(func() { ln.Close() })
	return ln
}

func (s *server) handle(c net.Conn, cfg *tls.Config) {
	defer c.Close()
	if s.sick.Load() {
		return
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if cfg != nil {
		tc := tls.Server(c, cfg)
		if err := tc.Handshake(); err != nil {
			return
		}
		c = tc
	}
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		return
	}
	switch {
	case strings.HasPrefix(line, "GET "):
		for {
			h, err := br.ReadString('\n')
			if err != nil || strings.TrimSpace(h) == "" {
				break
			}
		}
		code := int(s.status.Load())
		switch path := strings.Fields(line)[1]; {
		case strings.HasPrefix(path, "/primary"):
			code = map[bool]int{true: 200, false: 503}[s.primary.Load()]
		case strings.HasPrefix(path, "/replica"):
			code = map[bool]int{true: 503, false: 200}[s.primary.Load()]
		}
		fmt.Fprintf(c, "HTTP/1.0 %d %s\r\nContent-Length: 0\r\n\r\n", code, http.StatusText(code))
	case line == "HELLO\n":
		fmt.Fprintf(c, "%s\n", s.name)
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		_, _ = io.Copy(io.Discard, br)
	}
}

// session is a connection from the client through a balancer to a
// server, open until closed.
type session struct {
	c    net.Conn
	br   *bufio.Reader
	Name string // who answered HELLO
}

// open connects from the client to addr (over TLS if tlsOn) and returns
// the session once the server said its name.
func (l *lab) open(addr string, tlsOn bool) (*session, error) {
	var s *session
	err := l.client.Do(func() error {
		c, err := net.DialTimeout("tcp", addr, 3*time.Second)
		if err != nil {
			return err
		}
		if tlsOn {
			c = tls.Client(c, &tls.Config{InsecureSkipVerify: true})
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, "HELLO\n"); err != nil {
			c.Close()
			return err
		}
		br := bufio.NewReader(c)
		line, err := br.ReadString('\n')
		if err != nil {
			c.Close()
			return fmt.Errorf("%s: no name: %w", addr, err)
		}
		s = &session{c: c, br: br, Name: strings.TrimSpace(line)}
		return nil
	})
	return s, err
}

// closedBy reports whether the other side closed the session within d.
func (s *session) closedBy(d time.Duration) bool {
	_ = s.c.SetReadDeadline(time.Now().Add(d))
	_, err := s.br.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// names connects n times, one after the other, and counts who answered;
// a connection that got no name counts under "".
func (l *lab) names(addr string, n int, tlsOn bool) map[string]int {
	got := map[string]int{}
	for range n {
		s, err := l.open(addr, tlsOn)
		if err != nil {
			got[""]++
			continue
		}
		got[s.Name]++
		s.c.Close()
	}
	return got
}

// sameNames asserts that both balancers spread n connections to port as
// want (nil: both alike, whatever it is) and returns haproxy's spread.
// With a want, each balancer must first reach it (untilNames): on a loaded
// machine haproxy's first round after its start spread 3/1/2 where 2/2/2
// was due, a server's check not yet passed or flapping.
func (l *lab) sameNames(what string, port, n int, tlsOn bool, want map[string]int) map[string]int {
	l.t.Helper()
	if want != nil {
		l.untilNames(what, port, n, tlsOn, want)
	}
	var spreads []map[string]int
	for _, b := range l.lbs {
		spreads = append(spreads, l.names(net.JoinHostPort(b.IP(), fmt.Sprint(port)), n, tlsOn))
	}
	l.t.Logf("%s: haproxy %v, vipstack %v", what, spreads[0], spreads[1])
	if want != nil && !mapsEqual(spreads[0], want) {
		l.t.Errorf("%s: haproxy spread %v, the test expects %v", what, spreads[0], want)
	}
	if !mapsEqual(spreads[0], spreads[1]) {
		l.t.Errorf("%s: vipstack spread %v, haproxy %v", what, spreads[1], spreads[0])
	}
	return spreads[0]
}

// untilNames waits until a round of n connections to port lands as want
// on both balancers (the checks had to see a change first).
func (l *lab) untilNames(what string, port, n int, tlsOn bool, want map[string]int) {
	l.t.Helper()
	for _, b := range l.lbs {
		addr := net.JoinHostPort(b.IP(), fmt.Sprint(port))
		var last map[string]int
		err := testutil.PollEvery(l.t.Context(), 500*time.Millisecond, bound, func() error {
			if last = l.names(addr, n, tlsOn); !mapsEqual(last, want) {
				return fmt.Errorf("spread %v", last)
			}
			return nil
		})
		if err != nil {
			l.t.Fatalf("%s: %s never spread %d connections as %v: last %v", what, b.Name, n, want, last)
		}
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// statuses asks a balancer's stats socket for `show stat` and returns the
// status and check_status of each server of proxy px.
func statuses(sock, px string) (map[string]string, error) {
	c, err := net.DialTimeout("unix", sock, 3*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "show stat\n"); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(c)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "# ") {
		return nil, fmt.Errorf("show stat: no header in %q", b)
	}
	cols := strings.Split(strings.TrimPrefix(lines[0], "# "), ",")
	pxc, svc, stc, ckc := slices.Index(cols, "pxname"), slices.Index(cols, "svname"), slices.Index(cols, "status"), slices.Index(cols, "check_status")
	if pxc < 0 || svc < 0 || stc < 0 || ckc < 0 {
		return nil, fmt.Errorf("show stat: columns missing in %q", lines[0])
	}
	out := map[string]string{}
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if len(f) <= ckc || f[pxc] != px || f[svc] == "FRONTEND" || f[svc] == "BACKEND" {
			continue
		}
		out[f[svc]] = f[stc] + " " + strings.TrimPrefix(f[ckc], "* ")
	}
	return out, nil
}

// certificate is a self-signed certificate for the TLS backends.
func certificate(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"kubernetes"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

// dnsServer answers A queries for names on addr in h's namespace (as
// Docker's embedded DNS does for the Patroni file's resolvers section).
func (l *lab) dnsServer(h *testnet.Host, addr string, names map[string]netip.Addr) {
	l.t.Helper()
	var pc net.PacketConn
	if err := h.Do(func() (err error) { pc, err = net.ListenPacket("udp", addr); return err }); err != nil {
		l.t.Fatal(err)
	}
	mux := dns.NewServeMux()
	mux.HandleFunc(".", func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		q := r.Question[0]
		a, ok := names[strings.TrimSuffix(strings.ToLower(q.Name), ".")]
		switch {
		case !ok:
			m.Rcode = dns.RcodeNameError
		case q.Qtype == dns.TypeA:
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 5}, A: a.AsSlice()})
		}
		_ = w.WriteMsg(m)
	})
	srv := &dns.Server{PacketConn: pc, Handler: mux}
	go func() { _ = srv.ActivateAndServe() }()
	l.t.Cleanup(func() { _ = srv.Shutdown() })
}

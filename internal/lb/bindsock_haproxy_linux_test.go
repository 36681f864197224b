package lb

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// listenSock is what the kernel says of a listening socket: the options
// the bind parameters set and the listen queue (ss's Send-Q).
type listenSock struct {
	DeferAccept, FastOpen, Transparent int
	Device                             string
	Backlog                            int
}

// TestBindSockMatchesHaproxy: the same bind lines to haproxy 2.6 and to
// vipstack give listening sockets with the same options and queue, read
// from the kernel (each socket taken from its owner with pidfd_getfd),
// and both forward a client that speaks first.
func TestBindSockMatchesHaproxy(t *testing.T) {
	testnet.RequireRoot(t) // transparent needs CAP_NET_ADMIN; pidfd_getfd, ptrace rights
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	if _, err := exec.LookPath("ss"); err != nil {
		t.Skip("ss (iproute2) not installed")
	}
	for _, tc := range []struct{ name, global, bind, proxy string }{
		{name: "every parameter", bind: "defer-accept tfo interface lo transparent backlog 77"},
		{name: "tfo queue from the proxy's backlog", bind: "tfo", proxy: "  backlog 33\n"},
		{name: "tfo queue from maxconn", bind: "tfo", proxy: "  maxconn 55\n"},
		{name: "no parameter, no maxconn: somaxconn", bind: ""},
		{name: "tfo, no maxconn: the kernel's cap", bind: "tfo"},
		{name: "global maxconn", global: "global\n  maxconn 300\n", bind: "tfo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := startBackend(t, "s0")
			ports := freePorts(t, 2)
			conf := func(port string) string {
				return tc.global + "defaults\n  mode tcp\n  timeout connect 1s\n  timeout client 5s\n  timeout server 5s\n" +
					"frontend fe\n  bind 127.0.0.1:" + port + " " + tc.bind + "\n" + tc.proxy + "  default_backend be\n" +
					"backend be\n  server s0 " + b.addr.String() + "\n"
			}
			peers.HAProxy(t, conf(ports[0]))
			cfg, err := haproxycfg.Parse("haproxy.cfg", []byte(conf(ports[1])))
			if err != nil {
				t.Fatal(err)
			}
			newLBOpts(t, Options{}, cfg)
			haddr, vaddr := "127.0.0.1:"+ports[0], "127.0.0.1:"+ports[1]
			waitListening(t, "tcp", haddr)
			waitListening(t, "tcp", vaddr)
			h, v := readListenSock(t, ports[0]), readListenSock(t, ports[1])
			if diff := cmp.Diff(h, v); diff != "" {
				t.Errorf("listening socket (-haproxy +vipstack):\n%s", diff)
			}
			t.Logf("both: %+v", v)
			for _, addr := range []string{haddr, vaddr} {
				if got := speakFirst(t, addr); got != "s0" {
					t.Errorf("%s: greeting %q, want s0", addr, got)
				}
			}
		})
	}
}

// speakFirst connects to addr, sends a line (a deferred accept waits for
// data) and returns the backend's greeting.
func speakFirst(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("%s: no greeting: %v", addr, err)
	}
	return strings.TrimSpace(line)
}

// readListenSock finds the socket listening on 127.0.0.1:port, takes a
// copy from the process that owns it and reads its options.
func readListenSock(t *testing.T, port string) listenSock {
	t.Helper()
	fd := listenerFD(t, port)
	defer unix.Close(fd)
	var s listenSock
	var err error
	get := func(level, opt int) int {
		v, e := unix.GetsockoptInt(fd, level, opt)
		if e != nil && err == nil {
			err = e
		}
		return v
	}
	s.DeferAccept = get(unix.IPPROTO_TCP, unix.TCP_DEFER_ACCEPT)
	s.FastOpen = get(unix.IPPROTO_TCP, unix.TCP_FASTOPEN)
	s.Transparent = get(unix.IPPROTO_IP, unix.IP_TRANSPARENT)
	if err != nil {
		t.Fatalf("port %s: getsockopt: %v", port, err)
	}
	if s.Device, err = unix.GetsockoptString(fd, unix.SOL_SOCKET, unix.SO_BINDTODEVICE); err != nil {
		t.Fatalf("port %s: SO_BINDTODEVICE: %v", port, err)
	}
	out, err := exec.Command("ss", "-ltnH", "sport", "=", ":"+port).Output()
	if err != nil {
		t.Fatalf("ss: %v", err)
	}
	f := strings.Fields(string(out))
	if len(f) < 3 {
		t.Fatalf("ss shows no listener on port %s: %q", port, out)
	}
	s.Backlog, _ = strconv.Atoi(f[2])
	return s
}

// listenerFD returns a copy of the socket listening on 127.0.0.1:port:
// its inode from /proc/net/tcp, its owner from /proc/*/fd.
func listenerFD(t *testing.T, port string) int {
	t.Helper()
	n, _ := strconv.Atoi(port)
	want := fmt.Sprintf("0100007F:%04X", n)
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	inode := ""
	for _, ln := range strings.Split(string(data), "\n") {
		f := strings.Fields(ln)
		if len(f) > 9 && f[1] == want && f[3] == "0A" { // 0A: LISTEN
			inode = f[9]
			break
		}
	}
	if inode == "" {
		t.Fatalf("no listener on %s in /proc/net/tcp", want)
	}
	links, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, l := range links {
		if target, err := os.Readlink(l); err != nil || target != "socket:["+inode+"]" {
			continue
		}
		parts := strings.Split(l, "/")
		pid, _ := strconv.Atoi(parts[2])
		tfd, _ := strconv.Atoi(parts[4])
		pidfd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			t.Fatalf("pidfd_open %d: %v", pid, err)
		}
		fd, err := unix.PidfdGetfd(pidfd, tfd, 0)
		unix.Close(pidfd)
		if err != nil {
			t.Fatalf("pidfd_getfd %d/%d: %v", pid, tfd, err)
		}
		return fd
	}
	t.Fatalf("no process holds socket inode %s", inode)
	return -1
}

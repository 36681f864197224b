package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestLBPidfileAndUser: with `pidfile`, `user` and `group` in global,
// vipstack lb writes its pid, runs as that user and group once it
// listens, still forwards, and removes the pidfile at exit.
func TestLBPidfileAndUser(t *testing.T) {
	testnet.RequireRoot(t)
	server, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	go func() {
		for {
			c, err := server.Accept()
			if err != nil {
				return
			}
			fmt.Fprint(c, "hello\n")
			c.Close()
		}
	}()
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	front := probe.Addr().String()
	probe.Close()

	dir := t.TempDir()
	// The process, once nobody, removes its pidfile from here.
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	pidfile := filepath.Join(dir, "lb.pid")
	conf := fmt.Sprintf("global\n  daemon\n  user nobody\n  group nogroup\n  pidfile %s\n  nbthread 2\n"+
		"defaults\n  mode tcp\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n"+
		"frontend fe\n  bind %s\n  default_backend be\nbackend be\n  server s0 %s\n", pidfile, front, server.Addr())
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, out := startLBProcess(t, path)
	var body string
	waitFor(t, "the frontend to forward", func() bool {
		c, err := net.DialTimeout("tcp", front, time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		b, _ := io.ReadAll(c)
		body = string(b)
		return body == "hello\n"
	})
	// The frontend forwards from Apply on; the pidfile comes after it.
	var b []byte
	waitFor(t, "the pidfile", func() bool {
		b, err = os.ReadFile(pidfile)
		return err == nil && strings.HasSuffix(string(b), "\n") // written whole
	})
	if got, want := string(b), strconv.Itoa(cmd.Process.Pid)+"\n"; got != want {
		t.Errorf("pidfile holds %q, want %q", got, want)
	}
	// The pidfile is written, and the frontend forwards, just before
	// the switch of user.
	var ids map[string]string
	waitFor(t, "the process to become nobody", func() bool {
		ids = procIDs(t, cmd.Process.Pid)
		return ids["Uid"] != "0 0 0 0"
	})
	for _, k := range []string{"Uid", "Gid", "Groups"} {
		want := "65534 65534 65534 65534"
		if k == "Groups" {
			want = "65534"
		}
		if ids[k] != want {
			t.Errorf("/proc/%d/status %s: %q, want %q (nobody, nogroup)", cmd.Process.Pid, k, ids[k], want)
		}
	}
	if !strings.Contains(out.String(), "stays in the foreground") {
		t.Errorf("no warning about daemon in the output")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("vipstack lb exited: %v", err)
	}
	if _, err := os.Stat(pidfile); !os.IsNotExist(err) {
		t.Errorf("pidfile still there after exit: %v", err)
	}
}

// procIDs returns the Uid, Gid and Groups lines of a process's status,
// tabs and spaces folded to one space.
func procIDs(t *testing.T, pid int) map[string]string {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && (k == "Uid" || k == "Gid" || k == "Groups") {
			out[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	return out
}

// TestLBChroot: with `chroot`, vipstack lb runs with that
// directory as its root once it listens, still forwards, applies a
// changed file on SIGHUP (read through the root it had before), and
// removes its pidfile at exit.
func TestLBChroot(t *testing.T) {
	testnet.RequireRoot(t)
	serve := func(greeting string) net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				fmt.Fprint(c, greeting)
				c.Close()
			}
		}()
		return ln
	}
	one, two := serve("one\n"), serve("two\n")
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	front := probe.Addr().String()
	probe.Close()

	dir := t.TempDir()
	jail := filepath.Join(dir, "jail")
	if err := os.Mkdir(jail, 0o755); err != nil {
		t.Fatal(err)
	}
	pidfile := filepath.Join(dir, "lb.pid")
	conf := func(server net.Listener) string {
		return fmt.Sprintf("global\n  chroot %s\n  pidfile %s\n"+
			"defaults\n  mode tcp\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n"+
			"frontend fe\n  bind %s\n  default_backend be\nbackend be\n  server s0 %s\n", jail, pidfile, front, server.Addr())
	}
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(conf(one)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, out := startLBProcess(t, path)
	greet := func() string {
		c, err := net.DialTimeout("tcp", front, time.Second)
		if err != nil {
			return ""
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		b, _ := io.ReadAll(c)
		return string(b)
	}
	waitFor(t, "the chroot", func() bool {
		r, err := os.Readlink(fmt.Sprintf("/proc/%d/root", cmd.Process.Pid))
		return err == nil && r == jail
	})
	if got := greet(); got != "one\n" {
		t.Fatalf("through the frontend: %q, want one", got)
	}
	if err := os.WriteFile(path, []byte(conf(two)), 0o644); err != nil {
		t.Fatal(err)
	}
	// SIGHUP is handled once the start is over.
	waitFor(t, "the start to end", func() bool { return strings.Contains(out.String(), "vipstack lb running") })
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reload to reach server two", func() bool { return greet() == "two\n" })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("vipstack lb exited: %v", err)
	}
	if _, err := os.Stat(pidfile); !os.IsNotExist(err) {
		t.Errorf("pidfile still there after exit: %v", err)
	}
}

// startLBProcess runs `vipstack lb -f path --watch-interval 0` in a child
// process (TestLBHelperProcess) until the test ends, killing it then if it
// still runs, and printing its output if the test failed.
func startLBProcess(t *testing.T, path string) (*exec.Cmd, *syncbuf.Buffer) {
	t.Helper()
	out := new(syncbuf.Buffer)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLBHelperProcess$")
	cmd.Env = append(os.Environ(), "VIPSTACK_LB_HELPER_ARGS="+strings.Join([]string{"-f", path, "--watch-interval", "0"}, "\n"))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if t.Failed() {
			t.Logf("vipstack lb output:\n%s", out.String())
		}
	})
	return cmd, out
}

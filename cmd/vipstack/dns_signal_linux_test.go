package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/syncbuf"
)

func TestDNSHelperProcess(t *testing.T) {
	helperProcess(t, "VIPSTACK_DNS_HELPER_ARGS", "TestDNSSignalsReload", runDNS)
}

// TestDNSSignalsReload runs `vipstack dns` (the test binary re-executed) on
// loopback and edits its Corefile. SIGUSR1 reloads it, as in CoreDNS (the
// CoreDNS 1.8.1 peer, measured: SIGUSR1 reloads, SIGHUP is ignored), and so
// does SIGHUP, as in vipstack's other commands; a bad edit is refused with
// its file and line while the running Corefile keeps answering. Before,
// SIGHUP ended the process with nothing logged and SIGUSR1 was dropped.
// Each wait is bounded (10 s); none is asserted.
func TestDNSSignalsReload(t *testing.T) {
	port := freeDNSPort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	corefile := func(api, extra string) string {
		return fmt.Sprintf(".:%d {\n    bind 127.0.0.1\n    clusterdns managed.example.com {\n        api %s\n    }\n%s}\n", port, api, extra)
	}
	path := filepath.Join(t.TempDir(), "Corefile")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(corefile("198.18.0.5", ""))

	var out syncbuf.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDNSHelperProcess$")
	cmd.Env = append(os.Environ(), "VIPSTACK_DNS_HELPER_ARGS="+strings.Join([]string{"-conf", path}, "\n"))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("vipstack dns output:\n%s", out.String())
		}
	}()

	answer := func() string {
		c := &dns.Client{Timeout: 500 * time.Millisecond}
		m := new(dns.Msg)
		m.SetQuestion("api.managed.example.com.", dns.TypeA)
		r, _, err := c.Exchange(m, addr)
		if err != nil || len(r.Answer) != 1 {
			return ""
		}
		if a, ok := r.Answer[0].(*dns.A); ok {
			return a.A.String()
		}
		return ""
	}
	await := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
			select {
			case err := <-exited:
				t.Fatalf("vipstack dns exited (%v) while waiting for %s", err, what)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s within 10 s", what)
			}
		}
	}
	await("first answer", func() bool { return answer() == "198.18.0.5" })

	for _, step := range []struct {
		sig  syscall.Signal
		api  string
		want string
	}{
		{syscall.SIGUSR1, "198.18.0.6", "198.18.0.6"},
		{syscall.SIGHUP, "198.18.0.7", "198.18.0.7"},
	} {
		write(corefile(step.api, ""))
		if err := cmd.Process.Signal(step.sig); err != nil {
			t.Fatal(err)
		}
		await(fmt.Sprintf("answer %s after %v", step.want, step.sig), func() bool { return answer() == step.want })
	}

	// A bad edit: refused, named by file and line; the old answer stays.
	write(corefile("198.18.0.8", "    hosts {\n        198.18.3.2111 master-1.managed.example.com\n        fallthrough\n    }\n"))
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	await("the refusal in the log", func() bool { return strings.Contains(out.String(), "reload refused") })
	if log := out.String(); !strings.Contains(log, path+":") {
		t.Errorf("the refusal must name the Corefile and line (%s:N):\n%s", path, log)
	}
	if got := answer(); got != "198.18.0.7" {
		t.Errorf("after a refused reload: answer %q, want the running Corefile's 198.18.0.7", got)
	}
}

// freeDNSPort returns a loopback port free a moment ago for both TCP and
// UDP, as a DNS server binds both.
func freeDNSPort(t *testing.T) int {
	t.Helper()
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		ln.Close()
		if err == nil {
			pc.Close()
			return port
		}
	}
	t.Fatal("no loopback port free for both TCP and UDP in 20 tries")
	return 0
}

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/cpusched"
	"github.com/vipstack/vipstack/internal/syncbuf"
)

// TestDNSSchedSlice runs `vipstack dns` (the test binary re-executed, as
// TestDNSSignalsReload does) and checks that every thread of the serving
// process asks the kernel for the default slice (docs/design/dns.md). On
// a kernel without per-thread slices the process says so and the test
// skips.
func TestDNSSchedSlice(t *testing.T) {
	port := freeDNSPort(t)
	path := filepath.Join(t.TempDir(), "Corefile")
	corefile := fmt.Sprintf(".:%d {\n    bind 127.0.0.1\n    clusterdns managed.example.com {\n        api 198.18.0.5\n    }\n}\n", port)
	if err := os.WriteFile(path, []byte(corefile), 0o644); err != nil {
		t.Fatal(err)
	}
	var out syncbuf.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDNSHelperProcess$")
	cmd.Env = append(os.Environ(), "VIPSTACK_DNS_HELPER_ARGS="+strings.Join([]string{"-conf", path, "-log-level", "debug"}, "\n"))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("vipstack dns output:\n%s", out.String())
		}
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if s := out.String(); strings.Contains(s, "CPU slice set") {
			break
		} else if strings.Contains(s, "CPU slice left at the kernel's default") {
			t.Skipf("this kernel keeps no slice per thread:\n%s", s)
		}
		if time.Now().After(deadline) {
			t.Fatal("vipstack dns logged neither \"CPU slice set\" nor why not within 20 s")
		}
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		got, err := cpusched.Slice(tid)
		if err != nil {
			t.Fatal(err)
		}
		if got != defaultDNSSlice {
			t.Errorf("thread %d: slice %v, want %v", tid, got, defaultDNSSlice)
		}
	}
	t.Logf("%d threads, each with a %v slice", len(tasks), defaultDNSSlice)
}

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testutil"
)

func TestDNSMetricsHelperProcess(t *testing.T) {
	helperProcess(t, "VIPSTACK_DNS_METRICS_HELPER_ARGS", "TestDNSBuildInfo", runDNS)
}

// TestDNSBuildInfo runs `vipstack dns` (the test binary re-executed) with
// the Corefile's prometheus plugin on loopback and scrapes it: beside
// CoreDNS' own series it serves vipstack_build_info and one copy of the
// Go and process series.
func TestDNSBuildInfo(t *testing.T) {
	port := freeDNSPort(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := ln.Addr().String()
	ln.Close()
	path := filepath.Join(t.TempDir(), "Corefile")
	conf := fmt.Sprintf(".:%d {\n    bind 127.0.0.1\n    prometheus %s\n    clusterdns managed.example.com {\n        api 198.18.0.5\n    }\n}\n", port, metricsAddr)
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	var out syncbuf.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDNSMetricsHelperProcess$")
	cmd.Env = append(os.Environ(), "VIPSTACK_DNS_METRICS_HELPER_ARGS="+strings.Join([]string{"-conf", path}, "\n"))
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
	var text string
	testutil.Eventually(t, 20*time.Second, func() error {
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		text = string(b)
		return err
	})
	for _, want := range []string{"\nvipstack_build_info{", "\ncoredns_build_info{", "\ngo_goroutines ", "\nprocess_cpu_seconds_total "} {
		if n := strings.Count(text, want); n != 1 {
			t.Errorf("%d series %s in the scrape, want 1", n, strings.TrimSpace(want))
		}
	}
}

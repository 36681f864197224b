package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLBCheckDatapath: `vipstack lb --check --datapath kernel` refuses a
// mode tcp frontend the kernel cannot serve, naming the file and line,
// the proxy and the directive; auto and relay accept it; a bad
// --datapath is a usage error that says what is accepted.
func TestLBCheckDatapath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.cfg")
	cfg := `defaults
  mode tcp
  timeout connect 1s
  timeout client 1m
  timeout server 1m
frontend fe
  bind 127.0.0.1:9000
  default_backend be
backend be
  server s1 127.0.0.1:8001 check send-proxy-v2
`
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		datapath string
		code     int
		stderr   []string
	}{
		{datapath: "kernel", code: 1, stderr: []string{path + ":10: frontend fe (backend be)", `"server s1 send-proxy (v2)" needs the user-space relay`, "--datapath auto or relay"}},
		{datapath: "auto", code: 0},
		{datapath: "relay", code: 0},
		{datapath: "ebpf", code: 2, stderr: []string{`--datapath "ebpf": accepted: relay, kernel or auto`}},
	}
	for _, tt := range tests {
		t.Run(tt.datapath, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runLB(t.Context(), []string{"--check", "--datapath", tt.datapath, "-f", path}, &stdout, &stderr)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			for _, s := range tt.stderr {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("stderr does not say %q:\n%s", s, stderr.String())
				}
			}
		})
	}
}

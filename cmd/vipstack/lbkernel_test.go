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
	checkLBFlag(t, path, "--datapath", []lbFlagCase{
		{value: "kernel", code: 1, stderr: []string{path + ":10: frontend fe (backend be)", `"server s1 send-proxy (v2)" needs the user-space relay`, "--datapath auto or relay"}},
		{value: "auto", code: 0},
		{value: "relay", code: 0},
		{value: "ebpf", code: 2, stderr: []string{`--datapath "ebpf": accepted: relay, kernel or auto`}},
	})
}

// lbFlagCase is `vipstack lb --check FLAG value`'s exit code and what its
// standard error must say.
type lbFlagCase struct {
	value  string
	code   int
	stderr []string
}

// checkLBFlag runs `vipstack lb --check flag value -f path` for each case.
func checkLBFlag(t *testing.T, path, flag string, tests []lbFlagCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runLB(t.Context(), []string{"--check", flag, tt.value, "-f", path}, &stdout, &stderr)
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

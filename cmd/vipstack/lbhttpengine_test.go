package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLBCheckHTTPEngine: `vipstack lb --check --http-engine loop`
// refuses a mode http frontend using what the loop engine lacks, naming
// the file and line, the proxy and the directive; auto and std accept
// it; a bad --http-engine is a usage error that says what is accepted.
func TestLBCheckHTTPEngine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.cfg")
	cfg := `defaults
  mode http
  timeout connect 1s
  timeout client 1m
  timeout server 1m
frontend fe
  bind 127.0.0.1:9000
  default_backend be
backend be
  cookie SRV insert indirect nocache
  server s1 127.0.0.1:8001 cookie s1
`
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		engine string
		code   int
		stderr []string
	}{
		{engine: "loop", code: 1, stderr: []string{"--http-engine loop: " + path + ":10: frontend fe (backend be)", `"cookie" needs the std HTTP engine`, "--http-engine auto or std"}},
		{engine: "auto", code: 0},
		{engine: "std", code: 0},
		{engine: "fast", code: 2, stderr: []string{`--http-engine "fast": accepted: std, loop or auto`}},
	}
	for _, tt := range tests {
		t.Run(tt.engine, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runLB(t.Context(), []string{"--check", "--http-engine", tt.engine, "-f", path}, &stdout, &stderr)
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

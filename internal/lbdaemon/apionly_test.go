package lbdaemon

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/haproxycfg"
)

// TestRuntimeAPIOnly: a haproxy.cfg whose only listener is its `stats
// socket` starts, as haproxy starts it, and the runtime API answers
// with the backend's lines.
func TestRuntimeAPIOnly(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "api.sock")
	text := "global\n  stats socket " + sock + " mode 600 level admin\ndefaults\n  mode tcp\n  timeout connect 1s\n  timeout client 1s\n  timeout server 1s\n" +
		"backend b\n  server s 127.0.0.1:47012\n"
	cfg, err := haproxycfg.Parse("haproxy.cfg", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Start(cfg, Options{ConfigPath: "haproxy.cfg", ListenersPerBind: 1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.shutdown(0); d.Close() })
	c, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "show stat\n")
	out, _ := io.ReadAll(bufio.NewReader(c))
	if !strings.Contains(string(out), "\nb,s,") || !strings.Contains(string(out), "\nb,BACKEND,") {
		t.Errorf("show stat without backend b's lines:\n%s", out)
	}
}

package lbdaemon

import (
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

const haproxyText = "defaults\n  mode tcp\nfrontend main\n  bind 127.0.0.1:19445\n  default_backend masters\nbackend masters\n  server m0 198.18.0.11:6443 check\n"

// TestStartRefuses: the refusals that come before anything opens, each
// naming what is wrong and what is accepted; a *FlagError only for the
// command line's conflict with the file.
func TestStartRefuses(t *testing.T) {
	vip := netip.MustParseAddrPort("198.18.7.5:6443")
	bind := func(addr string) []lbconfig.Frontend {
		return []lbconfig.Frontend{{Name: "main", Backend: "masters", Binds: []lbconfig.Bind{{Addr: netip.MustParseAddrPort(addr)}}}}
	}
	tests := []struct {
		name     string
		cfg      *lbconfig.Config
		redirect netip.AddrPort
		want     string
		flagErr  bool
	}{
		{name: "unknown user", cfg: &lbconfig.Config{User: "vth-no-such-user", Frontends: bind("0.0.0.0:19445")},
			want: `haproxy.cfg: user "vth-no-such-user": no such user on this host (accepted: a name from the passwd database or a number)`},
		{name: "user with a redirect", cfg: &lbconfig.Config{User: "65534", Frontends: bind("0.0.0.0:19445")}, redirect: vip, flagErr: true,
			want: "--redirect changes nftables while it runs, which user 65534 in haproxy.cfg would no longer allow (accepted: --redirect without user/group, or user/group without --redirect)"},
		{name: "redirect without a wildcard bind", cfg: &lbconfig.Config{Frontends: bind("198.18.7.5:19445")}, redirect: vip,
			want: "--redirect: no frontend listens on every local IPv4 address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Start(tt.cfg, Options{ConfigPath: "haproxy.cfg", Redirect: tt.redirect, ListenersPerBind: 1,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err == nil {
				d.shutdown(0)
				d.Close()
				t.Fatalf("Start() succeeded; want %q", tt.want)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Start() = %v; want %q", err, tt.want)
			}
			if got := errors.As(err, new(*FlagError)); got != tt.flagErr {
				t.Errorf("Start() error is a *FlagError: %v; want %v", got, tt.flagErr)
			}
		})
	}
}

// TestLoad: the YAML form for *.yaml and *.yml, haproxy.cfg otherwise,
// also through the root a chroot left behind.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{"lb.cfg": haproxyText, "lb.yaml": haproxyText} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot("/")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, tt := range []struct {
		name    string
		root    *os.Root
		wantErr string // "" for a config with frontend main
	}{
		{name: "lb.cfg"},
		{name: "lb.yaml", wantErr: "lb.yaml:1"},
		{name: "lb.cfg", root: root},
		{name: "lb.yaml", root: root, wantErr: "lb.yaml:1"},
		{name: "missing.cfg", root: root, wantErr: "load haproxy config (through the root before chroot)"},
	} {
		path := filepath.Join(dir, tt.name)
		cfg, err := loadIn(tt.root, path, path)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s (root %v): %v; want an error with %q", tt.name, tt.root != nil, err, tt.wantErr)
			}
			continue
		}
		if err != nil || len(cfg.Frontends) != 1 || cfg.Frontends[0].Name != "main" {
			t.Errorf("%s (root %v): %+v, %v; want frontend main", tt.name, tt.root != nil, cfg, err)
		}
	}
}

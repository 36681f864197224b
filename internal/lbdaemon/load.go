package lbdaemon

import (
	"fmt"
	"os"
	"strings"

	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// Load reads the YAML form for *.yaml and *.yml, haproxy.cfg otherwise;
// both return a validated model.
func Load(path string) (*lbconfig.Config, error) {
	if isYAML(path) {
		return lbconfig.LoadYAML(path)
	}
	return haproxycfg.Load(path)
}

// loadIn is Load through root (the filesystem root before a chroot), nil
// for the current one; abs is path made absolute before the chroot.
func loadIn(root *os.Root, path, abs string) (*lbconfig.Config, error) {
	if root == nil {
		return Load(path)
	}
	data, err := root.ReadFile(strings.TrimPrefix(abs, "/"))
	if err != nil {
		return nil, fmt.Errorf("load haproxy config (through the root before chroot): %w", err)
	}
	if isYAML(path) {
		return lbconfig.ParseYAML(path, data)
	}
	return haproxycfg.ParseWith(path, data, haproxycfg.Options{LookupHost: haproxycfg.SystemLookup, LookupEnv: haproxycfg.SystemEnv})
}

func isYAML(path string) bool {
	return strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")
}

// fdsNeeded estimates the file descriptors the configuration's connection
// limits allow: two sockets per connection, plus a margin for listeners,
// checks and pipes.
func fdsNeeded(cfg *lbconfig.Config) int {
	conns := cfg.MaxConn * len(cfg.Frontends)
	if cfg.GlobalMaxConn > 0 {
		conns = min(conns, cfg.GlobalMaxConn)
	}
	return 2*conns + 256
}

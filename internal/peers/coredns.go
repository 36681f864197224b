package peers

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// BuildCoreDNS builds stock CoreDNS (./internal/peers/corednsstock: the
// CoreDNS source go.mod pins, with the in-tree plugins vipstack's DNS
// builds in) into dir and returns its path.
func BuildCoreDNS(dir string) (string, error) {
	return buildInModule(dir, "coredns", "./internal/peers/corednsstock")
}

// BuildReleaseCoreDNS builds stock CoreDNS as its release is built: the
// coredns main package at the version go.mod pins, with every in-tree
// plugin of its plugin.cfg, in its own module directory with its own
// go.sum (vipstack's go.sum lacks the modules of the plugins it does not
// embed). It returns the binary's path in dir. bench/node runs it as a
// node's CoreDNS and hack/corpushost as the upstream Corefile checker.
func BuildReleaseCoreDNS(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/coredns/coredns")
	out, err := cmd.Output()
	mod := strings.TrimSpace(string(out))
	if err != nil || mod == "" {
		return "", fmt.Errorf("find github.com/coredns/coredns in the module cache (go mod download github.com/coredns/coredns): %v", err)
	}
	bin := filepath.Join(dir, "coredns")
	cmd = exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, ".")
	cmd.Dir = mod
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build in %s: %v\n%s", mod, err, b)
	}
	return bin, nil
}

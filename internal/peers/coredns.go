package peers

import (
	"fmt"
	"os/exec"
	"path/filepath"
)

// BuildCoreDNS builds stock CoreDNS (./internal/peers/corednsstock: the
// CoreDNS source go.mod pins, with the in-tree plugins of the Corefile
// `vipstack render` writes) into dir and returns its path.
func BuildCoreDNS(dir string) (string, error) {
	out := filepath.Join(dir, "coredns")
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", out, "./internal/peers/corednsstock")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, b)
	}
	return out, nil
}

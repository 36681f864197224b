package nodelab

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/ociimage"
	"github.com/vipstack/vipstack/internal/version"
)

// PauseRef is the sandbox image every node's containerd runs pods in.
const PauseRef = "vipstack.test/pause:1"

// BuildStatic builds the main package pkg (a path relative to the vipstack
// module root, like "./internal/nodelab/pause") as a static binary
// (CGO_ENABLED=0) at dir/name, for a FROM-scratch image.
func BuildStatic(dir, name, pkg string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return out, nil
}

// ModuleRoot is the vipstack module's directory (tests run in their
// package's).
func ModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the vipstack module")
	}
	return filepath.Dir(mod), nil
}

// BuildPauseImage builds ./internal/nodelab/pause as the image PauseRef,
// an OCI archive in dir, for this machine's platform.
func BuildPauseImage(dir string) (string, error) {
	return BuildImage(dir, PauseRef, "./internal/nodelab/pause")
}

// EchoRef is the image BuildEchoImage writes.
const EchoRef = "vipstack.test/echo:1"

// BuildEchoImage builds ./internal/nodelab/echo, a backend that answers
// every connection on :8080 with $NODE_NAME, as the image EchoRef, an OCI
// archive in dir.
func BuildEchoImage(dir string) (string, error) {
	return BuildImage(dir, EchoRef, "./internal/nodelab/echo")
}

// BuildImage builds the main package pkg of the vipstack module (static)
// and writes it as a one-file image named ref, entrypoint /NAME (the
// package's last path element), for this machine's platform: an OCI
// archive at dir/NAME.oci.tar.
func BuildImage(dir, ref, pkg string) (string, error) {
	name := filepath.Base(pkg)
	bin, err := BuildStatic(dir, name, pkg)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	err = ociimage.WriteArchive(&b, ociimage.Archive{
		Name:    ref,
		Created: time.Unix(0, 0),
		Images: []ociimage.Image{{
			OS: "linux", Architecture: runtime.GOARCH,
			Files:  []ociimage.File{{Path: "/" + name, Mode: 0o755, Data: data}},
			Config: ociimage.Config{Entrypoint: []string{"/" + name}},
		}},
	})
	if err != nil {
		return "", fmt.Errorf("image %s: %w", ref, err)
	}
	archive := filepath.Join(dir, name+".oci.tar")
	if err := os.WriteFile(archive, b.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("image %s: %w", ref, err)
	}
	return archive, nil
}

// BuildVipstackImage runs the documented image command (go run ./hack/image)
// for this machine's platform and returns the archive, at dir/vipstack.oci.tar,
// and the image's reference, ghcr.io/vipstack/vipstack:TAG.
func BuildVipstackImage(dir, tag string) (archive, ref string, err error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", "", err
	}
	archive = filepath.Join(dir, "vipstack.oci.tar")
	cmd := exec.Command("go", "run", "./hack/image", "-platforms", "linux/"+runtime.GOARCH, "-tag", tag, "-o", archive)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("go run ./hack/image: %v\n%s", err, b)
	}
	return archive, version.Repository + ":" + tag, nil
}

package nodelab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// PauseRef is the sandbox image every node's containerd runs pods in.
const PauseRef = "vipstack.test/pause:1"

// BuildStatic builds the main package pkg (a path relative to the vipstack
// module root, like "./cmd/vipstack") as a static binary (CGO_ENABLED=0)
// at dir/name, for a FROM-scratch image.
func BuildStatic(dir, name, pkg string) (string, error) {
	root, err := moduleRoot()
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

func moduleRoot() (string, error) {
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

// Image is what BuildImage puts in a FROM-scratch image.
type Image struct {
	Ref string // name:tag the archive carries, e.g. PauseRef
	// Files maps a path in the image to a file on disk; each is copied
	// with its mode.
	Files      map[string]string
	Entrypoint []string
}

// BuildImage writes img as an OCI archive (what `ctr images import` and
// `podman load` read) at archive. It uses podman with a storage of its own
// under a temporary directory, removed afterwards, so the machine's podman
// images are untouched.
//
// TODO: build with the lead's internal/ociimage once it is on main, so the
// tier needs no podman.
func BuildImage(img Image, archive string) error {
	podman, err := exec.LookPath("podman")
	if err != nil {
		return fmt.Errorf("build image %s: podman is not installed (Debian package podman): %w", img.Ref, err)
	}
	work, err := os.MkdirTemp("", "vsrn-image-")
	if err != nil {
		return fmt.Errorf("build image %s: %w", img.Ref, err)
	}
	defer os.RemoveAll(work)
	ctx := filepath.Join(work, "context")
	var file strings.Builder
	file.WriteString("FROM scratch\n")
	i := 0
	for dst, src := range img.Files {
		name := fmt.Sprintf("f%d", i)
		i++
		b, err := os.ReadFile(src)
		if err != nil {
			return fmt.Errorf("build image %s: %w", img.Ref, err)
		}
		fi, err := os.Stat(src)
		if err != nil {
			return fmt.Errorf("build image %s: %w", img.Ref, err)
		}
		if err := os.MkdirAll(ctx, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(ctx, name), b, fi.Mode().Perm()); err != nil {
			return fmt.Errorf("build image %s: %w", img.Ref, err)
		}
		fmt.Fprintf(&file, "COPY %s %s\n", name, dst)
	}
	if len(img.Entrypoint) > 0 {
		fmt.Fprintf(&file, "ENTRYPOINT [%s]\n", quoteAll(img.Entrypoint))
	}
	if err := os.MkdirAll(ctx, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(ctx, "Containerfile"), []byte(file.String()), 0o644); err != nil {
		return err
	}
	storage := []string{"--root", filepath.Join(work, "root"), "--runroot", filepath.Join(work, "run"),
		"--storage-driver", "vfs", "--cgroup-manager", "cgroupfs", "--events-backend", "none"}
	run := func(args ...string) error {
		cmd := exec.Command(podman, append(append([]string{}, storage...), args...)...)
		cmd.Dir = ctx
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build image %s: podman %s: %v\n%s", img.Ref, strings.Join(args, " "), err, b)
		}
		return nil
	}
	if err := run("build", "-q", "--pull=never", "-t", img.Ref, "-f", "Containerfile", "."); err != nil {
		return err
	}
	_ = os.Remove(archive)
	return run("save", "--format", "oci-archive", "-o", archive, img.Ref)
}

func quoteAll(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}

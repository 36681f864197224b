package main

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/ociimage"
	"github.com/vipstack/vipstack/internal/version"
)

// TestImage runs the documented command (both platforms) and checks the
// archive: the name, one static binary per platform for the right
// machine, the entrypoint, the OCI labels. As root, with podman and
// containerd installed, it loads the archive into each (podman load, ctr
// images import), runs `vipstack version` in a container, and checks it
// prints the version of the checkout.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: builds vipstack for two platforms")
	}
	src, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ver, err := version.Describe(src)
	if err != nil {
		t.Skipf("skipping: %v (the image is built from a git checkout)", err)
	}
	rev, err := gitOut(src, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "vipstack.oci.tar")
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"-src", src, "-o", archive}, &stdout, &stderr); code != 0 {
		t.Fatalf("image exited %d:\n%s", code, stderr.String())
	}
	name := version.Repository + ":" + version.Tag(ver)
	if !strings.Contains(stdout.String(), name) {
		t.Errorf("output does not name the image %s:\n%s", name, stdout.String())
	}

	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ociimage.ReadArchive(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != name {
		t.Errorf("archive names %q, want %q", c.Name, name)
	}
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	if len(c.Images) != 2 {
		t.Fatalf("%d platforms in the archive, want linux/amd64 and linux/arm64", len(c.Images))
	}
	for _, im := range c.Images {
		p := im.Platform.OS + "/" + im.Platform.Architecture
		bin, ok := im.Files["vipstack"]
		if !ok {
			t.Errorf("%s: no /vipstack", p)
			continue
		}
		if bin.Header.Mode&0o111 == 0 {
			t.Errorf("%s: /vipstack mode %o is not executable", p, bin.Header.Mode)
		}
		e, err := elf.NewFile(bytes.NewReader(bin.Data))
		if err != nil {
			t.Errorf("%s: /vipstack: %v", p, err)
			continue
		}
		if e.Machine != machines[im.Platform.Architecture] {
			t.Errorf("%s: /vipstack is for %v", p, e.Machine)
		}
		for _, prog := range e.Progs {
			if prog.Type == elf.PT_INTERP {
				t.Errorf("%s: /vipstack has an ELF interpreter: not a static binary", p)
			}
		}
		if l := im.Files["usr/local/bin/vipstack"]; l.Header == nil || l.Header.Linkname != "/vipstack" {
			t.Errorf("%s: vipstack is not on PATH as /usr/local/bin/vipstack -> /vipstack", p)
		}
		if diff := cmp.Diff([]string{"/vipstack"}, im.Config.Config.Entrypoint); diff != "" {
			t.Errorf("%s: entrypoint (-want +got):\n%s", p, diff)
		}
		for k, want := range map[string]string{
			"org.opencontainers.image.version":  ver,
			"org.opencontainers.image.revision": rev,
			"org.opencontainers.image.source":   "https://github.com/vipstack/vipstack",
		} {
			if got := im.Config.Config.Labels[k]; got != want {
				t.Errorf("%s: label %s = %q, want %q", p, k, got, want)
			}
		}
	}

	want := "vipstack " + ver
	t.Run("podman", func(t *testing.T) { runPodman(t, archive, name, want) })
	t.Run("containerd", func(t *testing.T) { runContainerd(t, archive, name, want) })
}

// requireTools skips unless the test runs as root with the commands.
func requireTools(t *testing.T, cmds ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: running containers needs root (run the suite as root, e.g. via .ci/run)")
	}
	for _, c := range cmds {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("skipping: %s is not installed (.ci/run installs it)", c)
		}
	}
}

func runPodman(t *testing.T, archive, name, want string) {
	requireTools(t, "podman")
	dir := t.TempDir()
	base := []string{"--root", filepath.Join(dir, "root"), "--runroot", filepath.Join(dir, "run"),
		"--tmpdir", filepath.Join(dir, "tmp"), "--storage-driver", "vfs", "--cgroup-manager", "cgroupfs", "--events-backend", "none"}
	podman := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "podman", append(base, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	t.Cleanup(func() {
		exec.Command("podman", append(base, "system", "reset", "--force")...).Run()
	})
	if out := podman("load", "-i", archive); !strings.Contains(out, "Loaded image: "+name) {
		t.Fatalf("podman load did not load %s:\n%s", name, out)
	}
	// Root here may not raise rlimits above the host's hard limits, which
	// podman's defaults ask for.
	runArgs := []string{"run", "--rm", "--pull=never", "--network=none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"}
	if got := podman(append(runArgs, name, "version")...); !strings.HasPrefix(got, want+" ") && strings.TrimSpace(got) != want {
		t.Errorf("podman run %s version printed %q, want %q", name, got, want)
	}
	if got := podman(append(runArgs, "--entrypoint", "vipstack", name, "version")...); !strings.HasPrefix(got, want) {
		t.Errorf("vipstack from PATH printed %q, want %q", got, want)
	}
}

func runContainerd(t *testing.T, archive, name, want string) {
	requireTools(t, "containerd", "ctr", "runc")
	dir, err := os.MkdirTemp("", "vipstack-ctd-")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "containerd.sock")
	cfg := fmt.Sprintf(`version = 2
root = %q
state = %q
[grpc]
  address = %q
[plugins."io.containerd.grpc.v1.cri"]
  disable_tcp_service = true
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), sock)
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("containerd", "--config", filepath.Join(dir, "config.toml"))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		logf.Close()
		unmountBelow(t, dir)
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing containerd's directory: %v", err)
		}
	})
	ctr := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "ctr", append([]string{"--address", sock, "--namespace", "k8s.io"}, args...)...).CombinedOutput()
		if err != nil {
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("ctr %s: %v\n%s\ncontainerd's log:\n%s", strings.Join(args, " "), err, out, log)
		}
		return string(out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := exec.Command("ctr", "--address", sock, "version").Run(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("containerd did not answer on %s within 30s:\n%s", sock, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out := ctr("images", "import", archive); !strings.Contains(out, name) {
		t.Fatalf("ctr images import did not name %s:\n%s", name, out)
	}
	if got := ctr("run", "--rm", name, "vipstack-version-test", "/vipstack", "version"); !strings.HasPrefix(got, want) {
		t.Errorf("ctr run %s version printed %q, want %q", name, got, want)
	}
}

// unmountBelow unmounts whatever containerd left mounted under dir.
func unmountBelow(t *testing.T, dir string) {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Error(err)
		return
	}
	var mps []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
			mps = append(mps, f[1])
		}
	}
	for i := len(mps) - 1; i >= 0; i-- {
		if err := syscall.Unmount(mps[i], syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", mps[i], err)
		}
	}
}

// TestBuildScriptFlag keeps hack/build.sh's -X flag on the variable
// internal/version reads: a renamed variable would build binaries that
// print no version.
func TestBuildScriptFlag(t *testing.T) {
	b, err := os.ReadFile("../build.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "-X "+version.LDFlag+"=$ver") {
		t.Errorf("hack/build.sh does not set %s", version.LDFlag)
	}
}

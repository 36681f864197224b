package peers

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// buildCacheDir holds the binaries buildInModule made, one directory per
// source state, shared by the test processes of a run (go test runs
// packages in parallel, and about thirty tests build vipstack).
var buildCacheDir = filepath.Join(os.TempDir(), "vipstack-testbin")

// buildCacheAge is how old an entry of buildCacheDir may get before a new
// build removes it: every edit of the sources makes a new one, of about
// 100 MB.
const buildCacheAge = 2 * time.Hour

// buildCached builds the main package pkg of the module at root once per
// source state and links dir/name to the result (a copy across file
// systems). The state is a hash of the module's Go sources but its tests,
// go.mod, go.sum, the toolchain and the build environment; a test process
// that finds the binary of its state built by another uses it.
func buildCached(root, dir, name, pkg string) (string, error) {
	key, err := sourceKey(root, pkg)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(buildCacheDir, 0o700); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(buildCacheDir, key+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock the build cache: %w", err)
	}
	cached := filepath.Join(buildCacheDir, key, name)
	if _, err := os.Stat(cached); err != nil {
		pruneBuildCache(key)
		if err := os.MkdirAll(filepath.Dir(cached), 0o700); err != nil {
			return "", err
		}
		tmp := cached + ".new"
		cmd := exec.Command("go", "build", "-o", tmp, pkg)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
		}
		if err := os.Rename(tmp, cached); err != nil {
			return "", err
		}
	}
	out := filepath.Join(dir, name)
	if err := os.Link(cached, out); err != nil {
		if err := copyFile(cached, out); err != nil {
			return "", err
		}
	}
	return out, nil
}

// sourceKey hashes what the binary of pkg is made of (see buildCached).
func sourceKey(root, pkg string) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, pkg, runtime.Version())
	for _, v := range []string{"GOFLAGS", "CGO_ENABLED", "GOOS", "GOARCH", "GOAMD64", "GOEXPERIMENT", "CC"} {
		fmt.Fprintf(h, "%s=%s\n", v, os.Getenv(v))
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		base := d.Name()
		if d.IsDir() {
			if path != root && (base == "testdata" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !(strings.HasSuffix(base, ".go") && !strings.HasSuffix(base, "_test.go")) && path != filepath.Join(root, "go.mod") && path != filepath.Join(root, "go.sum") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		rel, _ := filepath.Rel(root, path)
		fmt.Fprintf(h, "%s\x00", rel)
		_, err = io.Copy(h, f)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("hash the sources under %s: %w", root, err)
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// pruneBuildCache removes the entries but keep older than buildCacheAge.
func pruneBuildCache(keep string) {
	ents, err := os.ReadDir(buildCacheDir)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := strings.TrimSuffix(e.Name(), ".lock")
		if name == keep {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > buildCacheAge {
			os.RemoveAll(filepath.Join(buildCacheDir, e.Name()))
		}
	}
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

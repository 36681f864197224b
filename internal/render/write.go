package render

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// allPaths lists every path Files may render, for WriteDir's clean-up.
func allPaths() []string {
	return []string{
		VipstackPodPath, KeepalivedPodPath, HAProxyPodPath, CoreDNSPodPath,
		KeepalivedConfPath, HAProxyCfgPath, CorefilePath,
	}
}

// ErrDirNotEmpty is WriteDir's error for an existing, non-empty directory
// without force.
var ErrDirNotEmpty = errors.New("choose another directory or force overwriting")

// WriteDir writes files (Files' result) under dir, creating directories
// with mode 0755 and files with mode 0644, and returns the paths written,
// sorted. A dir that exists and is not empty is refused unless force is
// set; with force, the rendered files replace what is there and files at
// paths Files may render but did not render this time (say, haproxy.cfg
// left from rendering a master, in a directory now rendered for a worker)
// are removed, so that the directory holds exactly one node's set. Other
// files are left alone.
func WriteDir(dir string, files map[string][]byte, force bool) ([]string, error) {
	if dir == "" {
		return nil, errors.New("output directory: empty path")
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("output directory %s: %w", dir, err)
	case len(entries) > 0 && !force:
		return nil, fmt.Errorf("output directory %s is not empty (it has %s): %w", dir, entries[0].Name(), ErrDirNotEmpty)
	}
	names := make([]string, 0, len(files))
	for rel := range files {
		if !filepath.IsLocal(rel) || strings.Contains(rel, `\`) {
			return nil, fmt.Errorf("output file %q is not a relative path inside the output directory", rel)
		}
		names = append(names, rel)
	}
	slices.Sort(names)
	if force {
		for _, rel := range allPaths() {
			if _, ok := files[rel]; ok {
				continue
			}
			p := filepath.Join(dir, filepath.FromSlash(rel))
			if err := os.Remove(p); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				return nil, fmt.Errorf("remove stale %s: %w", p, err)
			}
			// Tidy the directory if that emptied it; one holding
			// anything else stays, so the error is of no interest.
			_ = os.Remove(filepath.Dir(p))
		}
	}
	var written []string
	for _, rel := range names {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return written, fmt.Errorf("create directory for %s: %w", p, err)
		}
		if err := os.WriteFile(p, files[rel], 0o644); err != nil {
			return written, fmt.Errorf("write %s: %w", p, err)
		}
		// WriteFile keeps an existing file's mode and applies the umask
		// to a new one; the manifests must be 0644 either way.
		if err := os.Chmod(p, 0o644); err != nil {
			return written, fmt.Errorf("chmod %s: %w", p, err)
		}
		written = append(written, p)
	}
	return written, nil
}

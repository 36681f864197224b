// Command image builds vipstack's container image from this repository as
// an OCI archive, with no registry and no container engine: a static
// binary (CGO_ENABLED=0) per platform, cross-compiled, in a one-layer
// image whose entrypoint is /vipstack.
//
//	go run ./hack/image                      # linux/amd64 and linux/arm64
//	go run ./hack/image -platforms linux/amd64 -o vipstack.oci.tar
//
// The version is `git describe` of the checkout (internal/version.Describe),
// written into the binary with -ldflags and used as the image tag; the
// image is named ghcr.io/vipstack/vipstack:<version> unless -repository or
// -tag say otherwise. Load it with `podman load -i FILE` or
// `ctr -n k8s.io images import FILE`.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vipstack/vipstack/internal/ociimage"
	"github.com/vipstack/vipstack/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// options are the command's flags, checked.
type options struct {
	src        string
	out        string
	repository string
	tag        string
	platforms  []platform
}

type platform struct{ os, arch string }

func (p platform) String() string { return p.os + "/" + p.arch }

// supported are the platforms the image is built for; each is a static Go
// build, so another GOOS/GOARCH pair Go supports would build too, but only
// these are run and tested.
var supported = []platform{{"linux", "amd64"}, {"linux", "arm64"}}

func parsePlatforms(s string) ([]platform, error) {
	var ps []platform
	seen := map[platform]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		os, arch, ok := strings.Cut(f, "/")
		p := platform{os, arch}
		known := false
		for _, q := range supported {
			known = known || q == p
		}
		if !ok || !known {
			return nil, fmt.Errorf("-platforms: %q is not a supported platform (linux/amd64, linux/arm64)", f)
		}
		if seen[p] {
			return nil, fmt.Errorf("-platforms: %s given twice", p)
		}
		seen[p] = true
		ps = append(ps, p)
	}
	return ps, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		src        = fs.String("src", ".", "the repository to build from (a git checkout)")
		out        = fs.String("o", "", "archive to write (default _output/vipstack-TAG.oci.tar in -src)")
		repository = fs.String("repository", version.Repository, "image repository")
		tag        = fs.String("tag", "", "image tag (default: the version, git describe of -src)")
		plats      = fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated platforms")
		printVer   = fs.Bool("print-version", false, "print the version (git describe of -src) and exit; hack/build.sh uses it")
	)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "image: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *printVer {
		v, err := version.Describe(*src)
		if err != nil {
			fmt.Fprintf(stderr, "image: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, v)
		return 0
	}
	ps, err := parsePlatforms(*plats)
	if err != nil {
		fmt.Fprintf(stderr, "image: %v\n", err)
		return 2
	}
	o := options{src: *src, out: *out, repository: *repository, tag: *tag, platforms: ps}
	res, err := build(ctx, o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "image: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n  image    %s\n  version  %s\n", res.path, res.name, res.version)
	fmt.Fprintf(stdout, "load it with:\n  podman load -i %s\n  ctr -n k8s.io images import %s\n", res.path, res.path)
	return 0
}

type result struct {
	path, name, version string
}

// build compiles vipstack for each platform and writes the archive.
func build(ctx context.Context, o options, log io.Writer) (result, error) {
	src, err := filepath.Abs(o.src)
	if err != nil {
		return result{}, err
	}
	ver, err := version.Describe(src)
	if err != nil {
		return result{}, fmt.Errorf("the version of %s: %w (the image is built from a git checkout)", src, err)
	}
	rev, err := gitOut(src, "rev-parse", "HEAD")
	if err != nil {
		return result{}, err
	}
	ct, err := gitOut(src, "log", "-1", "--format=%ct")
	if err != nil {
		return result{}, err
	}
	secs, err := strconv.ParseInt(ct, 10, 64)
	if err != nil {
		return result{}, fmt.Errorf("commit time %q: %w", ct, err)
	}
	created := time.Unix(secs, 0).UTC()
	tag := o.tag
	if tag == "" {
		tag = version.Tag(ver)
	}
	name := o.repository + ":" + tag
	path := o.out
	if path == "" {
		path = filepath.Join(src, "_output", "vipstack-"+tag+".oci.tar")
	}

	tmp, err := os.MkdirTemp("", "vipstack-image-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(tmp)
	a := ociimage.Archive{Name: name, Created: created}
	for _, p := range o.platforms {
		bin := filepath.Join(tmp, "vipstack-"+p.os+"-"+p.arch)
		fmt.Fprintf(log, "image: building vipstack %s for %s\n", ver, p)
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false",
			"-ldflags", "-s -w -X "+version.LDFlag+"="+ver, "-o", bin, "./cmd/vipstack")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.os, "GOARCH="+p.arch, "GOFLAGS=")
		var errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = log, &errb
		if err := cmd.Run(); err != nil {
			return result{}, fmt.Errorf("go build for %s: %w\n%s", p, err, errb.String())
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			return result{}, err
		}
		a.Images = append(a.Images, ociimage.Image{
			OS: p.os, Architecture: p.arch,
			Files:  files(data),
			Config: imageConfig(ver, rev, created),
		})
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return result{}, err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".image-*")
	if err != nil {
		return result{}, err
	}
	defer os.Remove(f.Name())
	if err := ociimage.WriteArchive(f, a); err != nil {
		f.Close()
		return result{}, err
	}
	if err := f.Close(); err != nil {
		return result{}, err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return result{}, err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return result{}, err
	}
	return result{path: path, name: name, version: ver}, nil
}

// files is the image's file system: the binary at /vipstack, on PATH as
// /usr/local/bin/vipstack, a /tmp, and the users the manifests run as
// (root for the node-level daemons, 65532 "nonroot" for the controller).
func files(bin []byte) []ociimage.File {
	return []ociimage.File{
		{Path: "/vipstack", Mode: 0o755, Data: bin},
		{Path: "/usr/local/bin/vipstack", Mode: fs.ModeSymlink | 0o777, Link: "/vipstack"},
		{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{Path: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnonroot:x:65532:\n")},
	}
}

func imageConfig(ver, rev string, created time.Time) ociimage.Config {
	return ociimage.Config{
		Entrypoint: []string{"/vipstack"},
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "vipstack",
			"org.opencontainers.image.description": "On-premise cluster networking in one binary: VRRP virtual IPs, load balancing, cluster DNS",
			"org.opencontainers.image.source":      "https://github.com/vipstack/vipstack",
			"org.opencontainers.image.url":         "https://github.com/vipstack/vipstack",
			"org.opencontainers.image.revision":    rev,
			"org.opencontainers.image.version":     ver,
			"org.opencontainers.image.created":     created.Format(time.RFC3339),
		},
	}
}

func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return "", errors.Join(fmt.Errorf("git %s: %w", strings.Join(args, " "), err), errors.New(strings.TrimSpace(errb.String())))
	}
	return strings.TrimSpace(string(out)), nil
}

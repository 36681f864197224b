package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Media types of the OCI Image Format Specification v1.1.
const (
	MediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	MediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	MediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// Annotation keys on index.json's entry.
const (
	AnnotationRefName       = "org.opencontainers.image.ref.name"
	AnnotationContainerdRef = "io.containerd.image.name"
)

// File is one entry of an image's file system.
type File struct {
	// Path is absolute and clean, such as /usr/local/bin/vipstack.
	Path string
	// Mode holds the permission bits; fs.ModeDir marks a directory and
	// fs.ModeSymlink a symbolic link to Link.
	Mode fs.FileMode
	// Data is a regular file's content.
	Data []byte
	// Link is a symbolic link's target.
	Link string
}

// Config is the part of the image configuration a runtime acts on
// (config.md, "config").
type Config struct {
	Entrypoint []string          `json:"Entrypoint,omitempty"`
	Cmd        []string          `json:"Cmd,omitempty"`
	Env        []string          `json:"Env,omitempty"`
	User       string            `json:"User,omitempty"`
	WorkingDir string            `json:"WorkingDir,omitempty"`
	Labels     map[string]string `json:"Labels,omitempty"`
}

// Image is one platform's image.
type Image struct {
	OS, Architecture, Variant string
	Files                     []File
	Config                    Config
}

// Archive is what WriteArchive writes.
type Archive struct {
	// Name is the full image reference, such as
	// ghcr.io/vipstack/vipstack:v0.1.0.
	Name string
	// Created is the images' creation time and every file's modification
	// time; the same Created keeps the archive reproducible.
	Created time.Time
	// Images holds one image per platform, each platform once.
	Images []Image
}

// Descriptor is a content descriptor (descriptor.md).
type Descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *Platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Platform is a descriptor's platform (image-index.md).
type Platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Variant      string `json:"variant,omitempty"`
}

// Index is an image index (image-index.md), also the layout's index.json.
type Index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []Descriptor `json:"manifests"`
}

// Manifest is an image manifest (manifest.md).
type Manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        Descriptor   `json:"config"`
	Layers        []Descriptor `json:"layers"`
}

// ImageConfig is the image configuration (config.md).
type ImageConfig struct {
	Created      string  `json:"created"`
	Architecture string  `json:"architecture"`
	OS           string  `json:"os"`
	Variant      string  `json:"variant,omitempty"`
	Config       Config  `json:"config"`
	RootFS       RootFS  `json:"rootfs"`
	History      []Event `json:"history,omitempty"`
}

// RootFS lists the layers' uncompressed digests.
type RootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

// Event is an entry of an image configuration's history.
type Event struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by,omitempty"`
}

// refRE is a loose image reference: lowercase repository path, then a tag
// (docker/distribution's grammar, without digests).
var refRE = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// Validate reports what makes the archive unwritable.
func (a *Archive) Validate() error {
	var errs []error
	if !refRE.MatchString(a.Name) {
		errs = append(errs, fmt.Errorf("image name %q is not REPOSITORY:TAG (lowercase repository, a tag of letters, digits, '_', '.' and '-'), e.g. ghcr.io/vipstack/vipstack:v0.1.0", a.Name))
	}
	if len(a.Images) == 0 {
		errs = append(errs, errors.New("no image to write: give at least one platform"))
	}
	seen := map[string]bool{}
	for i, im := range a.Images {
		p := im.OS + "/" + im.Architecture
		if im.Variant != "" {
			p += "/" + im.Variant
		}
		if im.OS == "" || im.Architecture == "" {
			errs = append(errs, fmt.Errorf("image %d: platform %q needs an OS and an architecture (e.g. linux/amd64)", i, p))
		}
		if seen[p] {
			errs = append(errs, fmt.Errorf("image %d: platform %s given twice", i, p))
		}
		seen[p] = true
		paths := map[string]bool{}
		for _, f := range im.Files {
			if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == "/" {
				errs = append(errs, fmt.Errorf("image %s: file path %q is not an absolute, clean path below /", p, f.Path))
			}
			if paths[f.Path] {
				errs = append(errs, fmt.Errorf("image %s: file %s given twice", p, f.Path))
			}
			paths[f.Path] = true
			if f.Mode&fs.ModeSymlink != 0 && f.Link == "" {
				errs = append(errs, fmt.Errorf("image %s: symbolic link %s has no target", p, f.Path))
			}
		}
	}
	return errors.Join(errs...)
}

// WriteArchive writes a as an OCI image-layout tar archive to w.
func WriteArchive(w io.Writer, a Archive) error {
	if err := a.Validate(); err != nil {
		return err
	}
	created := a.Created.UTC().Truncate(time.Second)
	blobs := map[string][]byte{}
	put := func(mediaType string, b []byte) Descriptor {
		sum := sha256.Sum256(b)
		d := "sha256:" + hex.EncodeToString(sum[:])
		blobs[d] = b
		return Descriptor{MediaType: mediaType, Digest: d, Size: int64(len(b))}
	}
	putJSON := func(mediaType string, v any) (Descriptor, error) {
		b, err := json.Marshal(v)
		if err != nil {
			return Descriptor{}, err
		}
		return put(mediaType, b), nil
	}

	idx := Index{SchemaVersion: 2, MediaType: MediaTypeIndex}
	for _, im := range a.Images {
		layer, diffID, err := layerOf(im.Files, created)
		if err != nil {
			return fmt.Errorf("image %s/%s: %w", im.OS, im.Architecture, err)
		}
		ld := put(MediaTypeLayer, layer)
		cfg := ImageConfig{
			Created: created.Format(time.RFC3339), Architecture: im.Architecture, OS: im.OS, Variant: im.Variant,
			Config:  im.Config,
			RootFS:  RootFS{Type: "layers", DiffIDs: []string{diffID}},
			History: []Event{{Created: created.Format(time.RFC3339), CreatedBy: "vipstack internal/ociimage"}},
		}
		cd, err := putJSON(MediaTypeConfig, cfg)
		if err != nil {
			return err
		}
		md, err := putJSON(MediaTypeManifest, Manifest{SchemaVersion: 2, MediaType: MediaTypeManifest, Config: cd, Layers: []Descriptor{ld}})
		if err != nil {
			return err
		}
		md.Platform = &Platform{Architecture: im.Architecture, OS: im.OS, Variant: im.Variant}
		idx.Manifests = append(idx.Manifests, md)
	}
	id, err := putJSON(MediaTypeIndex, idx)
	if err != nil {
		return err
	}
	id.Annotations = map[string]string{AnnotationRefName: a.Name, AnnotationContainerdRef: a.Name}
	top, err := json.Marshal(Index{SchemaVersion: 2, MediaType: MediaTypeIndex, Manifests: []Descriptor{id}})
	if err != nil {
		return err
	}

	tw := tar.NewWriter(w)
	entry := func(name string, mode int64, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(b)), ModTime: created, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	dir := func(name string) error {
		return tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, ModTime: created, Typeflag: tar.TypeDir, Format: tar.FormatPAX})
	}
	if err := entry("oci-layout", 0o644, []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := entry("index.json", 0o644, top); err != nil {
		return err
	}
	if err := dir("blobs/"); err != nil {
		return err
	}
	if err := dir("blobs/sha256/"); err != nil {
		return err
	}
	for _, d := range slices.Sorted(maps.Keys(blobs)) {
		if err := entry("blobs/sha256/"+strings.TrimPrefix(d, "sha256:"), 0o644, blobs[d]); err != nil {
			return err
		}
	}
	return tw.Close()
}

// layerOf returns the gzip-compressed tar of files (with their parent
// directories) and the digest of the uncompressed tar.
func layerOf(files []File, mtime time.Time) (gz []byte, diffID string, err error) {
	all := map[string]File{}
	for _, f := range files {
		all[f.Path] = f
		for d := path.Dir(f.Path); d != "/"; d = path.Dir(d) {
			if _, ok := all[d]; !ok {
				all[d] = File{Path: d, Mode: fs.ModeDir | 0o755}
			}
		}
	}
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, p := range slices.Sorted(maps.Keys(all)) {
		f := all[p]
		h := &tar.Header{Name: strings.TrimPrefix(p, "/"), Mode: int64(f.Mode.Perm()), ModTime: mtime, Format: tar.FormatPAX}
		if f.Mode&fs.ModeSticky != 0 {
			h.Mode |= 0o1000
		}
		switch {
		case f.Mode.IsDir():
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		case f.Mode&fs.ModeSymlink != 0:
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.Link
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, "", err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, "", err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(raw.Bytes())
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		return nil, "", err
	}
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return out.Bytes(), "sha256:" + hex.EncodeToString(sum[:]), nil
}

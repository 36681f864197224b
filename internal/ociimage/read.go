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
	"strings"
)

// Contents is what ReadArchive found in an archive, every blob checked
// against its digest and size.
type Contents struct {
	// Name is index.json's reference name.
	Name string
	// Images holds one entry per platform, in the index's order.
	Images []Contained
}

// Contained is one platform's image of an archive.
type Contained struct {
	Platform Platform
	Manifest Manifest
	Config   ImageConfig
	// Files maps each path in the layers (without the leading slash, as
	// in the tar) to its header and, for regular files, its content.
	Files map[string]ContainedFile
}

// ContainedFile is one file of a layer.
type ContainedFile struct {
	Header *tar.Header
	Data   []byte
}

// maxArchive bounds what ReadArchive reads into memory.
const maxArchive = 1 << 30

// ReadArchive reads an OCI image-layout tar archive as WriteArchive
// writes it (one named index of per-platform manifests) and checks it.
func ReadArchive(r io.Reader) (*Contents, error) {
	files := map[string][]byte{}
	tr := tar.NewReader(io.LimitReader(r, maxArchive))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the archive: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files[strings.TrimPrefix(h.Name, "./")] = b
	}
	if string(files["oci-layout"]) == "" {
		return nil, errors.New("no oci-layout file: not an OCI image layout")
	}
	blob := func(d Descriptor, mediaType string) ([]byte, error) {
		if d.MediaType != mediaType {
			return nil, fmt.Errorf("blob %s: media type %q, want %q", d.Digest, d.MediaType, mediaType)
		}
		hexd, ok := strings.CutPrefix(d.Digest, "sha256:")
		if !ok {
			return nil, fmt.Errorf("blob digest %q is not sha256", d.Digest)
		}
		b, ok := files["blobs/sha256/"+hexd]
		if !ok {
			return nil, fmt.Errorf("blob %s is missing", d.Digest)
		}
		sum := sha256.Sum256(b)
		if hex.EncodeToString(sum[:]) != hexd {
			return nil, fmt.Errorf("blob %s: content has digest sha256:%x", d.Digest, sum)
		}
		if int64(len(b)) != d.Size {
			return nil, fmt.Errorf("blob %s: size %d, descriptor says %d", d.Digest, len(b), d.Size)
		}
		return b, nil
	}
	var top Index
	if err := json.Unmarshal(files["index.json"], &top); err != nil {
		return nil, fmt.Errorf("index.json: %w", err)
	}
	if len(top.Manifests) != 1 {
		return nil, fmt.Errorf("index.json lists %d entries, want 1", len(top.Manifests))
	}
	c := &Contents{Name: top.Manifests[0].Annotations[AnnotationRefName]}
	b, err := blob(top.Manifests[0], MediaTypeIndex)
	if err != nil {
		return nil, err
	}
	var idx Index
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("image index: %w", err)
	}
	for _, md := range idx.Manifests {
		if md.Platform == nil {
			return nil, fmt.Errorf("manifest %s has no platform", md.Digest)
		}
		im := Contained{Platform: *md.Platform, Files: map[string]ContainedFile{}}
		b, err := blob(md, MediaTypeManifest)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &im.Manifest); err != nil {
			return nil, fmt.Errorf("manifest %s: %w", md.Digest, err)
		}
		if b, err = blob(im.Manifest.Config, MediaTypeConfig); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &im.Config); err != nil {
			return nil, fmt.Errorf("config %s: %w", im.Manifest.Config.Digest, err)
		}
		if len(im.Config.RootFS.DiffIDs) != len(im.Manifest.Layers) {
			return nil, fmt.Errorf("config %s: %d diff_ids for %d layers", im.Manifest.Config.Digest, len(im.Config.RootFS.DiffIDs), len(im.Manifest.Layers))
		}
		for i, ld := range im.Manifest.Layers {
			gz, err := blob(ld, MediaTypeLayer)
			if err != nil {
				return nil, err
			}
			zr, err := gzip.NewReader(bytes.NewReader(gz))
			if err != nil {
				return nil, fmt.Errorf("layer %s: %w", ld.Digest, err)
			}
			raw, err := io.ReadAll(io.LimitReader(zr, maxArchive))
			if err != nil {
				return nil, fmt.Errorf("layer %s: %w", ld.Digest, err)
			}
			sum := sha256.Sum256(raw)
			if got := "sha256:" + hex.EncodeToString(sum[:]); got != im.Config.RootFS.DiffIDs[i] {
				return nil, fmt.Errorf("layer %s: uncompressed digest %s, config's diff_id %s", ld.Digest, got, im.Config.RootFS.DiffIDs[i])
			}
			lr := tar.NewReader(bytes.NewReader(raw))
			for {
				h, err := lr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					return nil, fmt.Errorf("layer %s: %w", ld.Digest, err)
				}
				data, err := io.ReadAll(lr)
				if err != nil {
					return nil, err
				}
				im.Files[strings.TrimSuffix(h.Name, "/")] = ContainedFile{Header: h, Data: data}
			}
		}
		c.Images = append(c.Images, im)
	}
	return c, nil
}

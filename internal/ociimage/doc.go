// Package ociimage writes container images as OCI image-layout archives
// (the OCI Image Format Specification v1.1: image-layout.md, manifest.md,
// image-index.md, config.md), with nothing but the standard library and
// no registry: the archive is what `podman load` and `ctr images import`
// read.
//
// An archive holds one image name. Its index.json has one entry, an image
// index with a manifest per platform, so that a runtime loading it picks
// its own platform; that entry carries the name as
// org.opencontainers.image.ref.name (the full reference, as podman writes
// it) and io.containerd.image.name (what ctr images import names the image
// by). Each platform's image is one layer.
//
// The output is reproducible: the same files, configuration and creation
// time give the same bytes, so the same commit gives the same digests.
package ociimage

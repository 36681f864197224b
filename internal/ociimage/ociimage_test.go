package ociimage

import (
	"archive/tar"
	"bytes"
	"io"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func testArchive() Archive {
	return Archive{
		Name:    "example.test/vipstack:v1.2.3-4-gabc",
		Created: time.Date(2026, 11, 24, 11, 46, 7, 0, time.UTC),
		Images: []Image{
			{OS: "linux", Architecture: "amd64", Files: []File{
				{Path: "/vipstack", Mode: 0o755, Data: []byte("amd64 binary")},
				{Path: "/usr/local/bin/vipstack", Mode: fs.ModeSymlink | 0o777, Link: "/vipstack"},
				{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
			}, Config: Config{Entrypoint: []string{"/vipstack"}, Env: []string{"PATH=/usr/local/bin"}, Labels: map[string]string{"a": "b"}}},
			{OS: "linux", Architecture: "arm64", Files: []File{
				{Path: "/vipstack", Mode: 0o755, Data: []byte("arm64 binary")},
			}, Config: Config{Entrypoint: []string{"/vipstack"}}},
		},
	}
}

func TestWriteReadArchive(t *testing.T) {
	a := testArchive()
	var buf bytes.Buffer
	if err := WriteArchive(&buf, a); err != nil {
		t.Fatal(err)
	}
	c, err := ReadArchive(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != a.Name {
		t.Errorf("name %q, want %q", c.Name, a.Name)
	}
	if len(c.Images) != 2 {
		t.Fatalf("%d images, want 2", len(c.Images))
	}
	for i, im := range a.Images {
		got := c.Images[i]
		if diff := cmp.Diff(Platform{OS: im.OS, Architecture: im.Architecture}, got.Platform); diff != "" {
			t.Errorf("image %d platform (-want +got):\n%s", i, diff)
		}
		if diff := cmp.Diff(im.Config, got.Config.Config); diff != "" {
			t.Errorf("image %d config (-want +got):\n%s", i, diff)
		}
		if got.Config.Created != "2026-11-24T11:46:07Z" || got.Config.OS != im.OS || got.Config.Architecture != im.Architecture {
			t.Errorf("image %d config: created %q os %q arch %q", i, got.Config.Created, got.Config.OS, got.Config.Architecture)
		}
		for _, f := range im.Files {
			cf, ok := got.Files[strings.TrimPrefix(f.Path, "/")]
			if !ok {
				t.Errorf("image %d: %s is not in the layer", i, f.Path)
				continue
			}
			if !cf.Header.ModTime.Equal(a.Created) {
				t.Errorf("image %d: %s mtime %v, want %v", i, f.Path, cf.Header.ModTime, a.Created)
			}
			switch {
			case f.Mode.IsDir():
				if cf.Header.Typeflag != tar.TypeDir || cf.Header.Mode != 0o1777 {
					t.Errorf("image %d: %s type %c mode %o, want a directory 1777", i, f.Path, cf.Header.Typeflag, cf.Header.Mode)
				}
			case f.Mode&fs.ModeSymlink != 0:
				if cf.Header.Typeflag != tar.TypeSymlink || cf.Header.Linkname != f.Link {
					t.Errorf("image %d: %s type %c link %q, want a link to %q", i, f.Path, cf.Header.Typeflag, cf.Header.Linkname, f.Link)
				}
			default:
				if string(cf.Data) != string(f.Data) || cf.Header.Mode != int64(f.Mode.Perm()) {
					t.Errorf("image %d: %s content %q mode %o, want %q %o", i, f.Path, cf.Data, cf.Header.Mode, f.Data, f.Mode.Perm())
				}
			}
		}
		// Parent directories are in the layer, so every runtime unpacks
		// the link's directory.
		if i == 0 {
			for _, d := range []string{"usr", "usr/local", "usr/local/bin"} {
				if h := got.Files[d].Header; h == nil || h.Typeflag != tar.TypeDir {
					t.Errorf("image 0: parent directory %s missing from the layer", d)
				}
			}
		}
	}

	// The same input gives the same bytes.
	var again bytes.Buffer
	if err := WriteArchive(&again, testArchive()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("two writes of the same archive differ")
	}
}

func TestReadArchiveRefusesCorruption(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteArchive(&buf, testArchive()); err != nil {
		t.Fatal(err)
	}
	// Flip one byte inside the first blob's content: its digest no longer
	// matches.
	b := buf.Bytes()
	tr := tar.NewReader(bytes.NewReader(b))
	var off int64
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(h.Name, "blobs/sha256/") && h.Typeflag == tar.TypeReg {
			data := make([]byte, h.Size)
			if _, err := io.ReadFull(tr, data); err != nil {
				t.Fatal(err)
			}
			off = int64(bytes.Index(b, data))
			break
		}
	}
	b[off] ^= 0xff
	if _, err := ReadArchive(bytes.NewReader(b)); err == nil || !strings.Contains(err.Error(), "content has digest") {
		t.Errorf("corrupted blob: err %v, want a digest mismatch", err)
	}
}

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*Archive)
		want string
	}{
		{"uppercase repository", func(a *Archive) { a.Name = "Example.test/vipstack:v1" }, `image name "Example.test/vipstack:v1" is not REPOSITORY:TAG`},
		{"no tag", func(a *Archive) { a.Name = "example.test/vipstack" }, "is not REPOSITORY:TAG"},
		{"plus in tag", func(a *Archive) { a.Name = "example.test/vipstack:v1+dirty" }, "is not REPOSITORY:TAG"},
		{"no images", func(a *Archive) { a.Images = nil }, "no image to write"},
		{"platform twice", func(a *Archive) { a.Images[1].Architecture = "amd64" }, "platform linux/amd64 given twice"},
		{"no arch", func(a *Archive) { a.Images[1].Architecture = "" }, "needs an OS and an architecture"},
		{"relative path", func(a *Archive) { a.Images[0].Files[0].Path = "vipstack" }, `file path "vipstack" is not an absolute, clean path`},
		{"unclean path", func(a *Archive) { a.Images[0].Files[0].Path = "/usr/../vipstack" }, "is not an absolute, clean path"},
		{"file twice", func(a *Archive) { a.Images[1].Files = append(a.Images[1].Files, a.Images[1].Files[0]) }, "file /vipstack given twice"},
		{"link without target", func(a *Archive) { a.Images[0].Files[1].Link = "" }, "symbolic link /usr/local/bin/vipstack has no target"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := testArchive()
			tt.edit(&a)
			var buf bytes.Buffer
			err := WriteArchive(&buf, a)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want one containing %q", err, tt.want)
			}
			if buf.Len() != 0 {
				t.Errorf("%d bytes written for a refused archive", buf.Len())
			}
		})
	}
}

// Package version says which build of vipstack this is, and names the
// container image of that build.
//
// The version is the output of `git describe` written into the binary at
// build time (hack/image and hack/build.sh pass it through -ldflags, see
// LDFlag). A binary built without it (`go build`, `go run`) falls back to
// what the Go toolchain recorded (runtime/debug.ReadBuildInfo): the module's
// pseudo-version or the VCS revision, marked "-dirty" when the tree had
// uncommitted changes. So `vipstack version` always names a commit when the
// build had one to name.
package version

import (
	"runtime/debug"
	"strings"
)

// Repository is the image repository vipstack's images are published
// under. Every manifest the project ships or prints (deploy/, the Helm
// chart, `vipstack render`, `vipstack manifest`) names Repository:Tag().
const Repository = "ghcr.io/vipstack/vipstack"

// Release is the release this tree is, or is heading for. The Helm chart's
// appVersion and the plain manifests in deploy/ name Repository:Release;
// a build from the commit tagged Release has exactly that version, and
// any other build names its own (git describe), so installing a
// development build means giving its tag (helm --set image.tag=...).
const Release = "v0.1.0"

// LDFlag is the -X flag that sets the version at build time:
//
//	go build -ldflags "-X github.com/vipstack/vipstack/internal/version.version=v1.2.3"
const LDFlag = "github.com/vipstack/vipstack/internal/version.version"

// version is set by the linker (LDFlag); empty in a plain go build.
var version string

// Info is what a build knows of itself.
type Info struct {
	// Version is the release or git-describe version, or the fallback
	// described in the package comment.
	Version string
	// Revision is the VCS commit, when the toolchain recorded it.
	Revision string
	// Modified is true when the tree had uncommitted changes.
	Modified bool
	// GoVersion is the toolchain that built the binary.
	GoVersion string
}

// Get returns this binary's build information.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuild(version, bi)
}

// String returns this binary's version.
func String() string { return Get().Version }

// Image returns the image reference of this build: Repository:Tag().
func Image() string { return Repository + ":" + Tag(String()) }

// unknown is the version of a build that recorded neither an ldflags
// version nor VCS information (go build -buildvcs=false outside a release
// build). It says how to get a real one instead of claiming "dev".
const unknown = "v0.0.0-unknown"

// fromBuild derives Info from the linker-set version and the toolchain's
// build information (nil when unavailable).
func fromBuild(ld string, bi *debug.BuildInfo) Info {
	var in Info
	if bi != nil {
		in.GoVersion = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Revision = s.Value
			case "vcs.modified":
				in.Modified = s.Value == "true"
			}
		}
	}
	switch {
	case ld != "":
		in.Version = ld
	case bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)":
		// Go 1.24 and later stamp a pseudo-version from the VCS
		// (v0.0.0-20261124114607-3bdd6f3c4d0a, "+dirty" when modified).
		in.Version = bi.Main.Version
	case in.Revision != "":
		in.Version = "v0.0.0-g" + short(in.Revision)
		if in.Modified {
			in.Version += "-dirty"
		}
	default:
		in.Version = unknown
	}
	return in
}

// String formats Info as `vipstack version` prints it.
func (in Info) String() string {
	s := "vipstack " + in.Version
	var extra []string
	if in.Revision != "" && !strings.Contains(in.Version, short(in.Revision)) {
		rev := in.Revision
		if in.Modified {
			rev += " (modified)"
		}
		extra = append(extra, "commit "+rev)
	}
	if in.GoVersion != "" {
		extra = append(extra, in.GoVersion)
	}
	if in.Version == unknown {
		extra = append(extra, "built without version information: build with hack/build.sh, or go build -buildvcs=true in a git checkout")
	}
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// Tag turns a version into an image tag. A tag is at most 128 characters
// of [A-Za-z0-9_.-], not starting with '.' or '-'; a semver build suffix
// ("+dirty") becomes "-dirty".
func Tag(v string) string {
	var b strings.Builder
	for _, r := range v {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	t := strings.TrimLeft(b.String(), ".-")
	if t == "" {
		t = "unknown"
	}
	if len(t) > 128 {
		t = t[:128]
	}
	return t
}

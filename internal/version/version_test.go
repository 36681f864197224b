package version

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFromBuild(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "3bdd6f3c4d0a404c8b67f4d858e3dee583b24cdb"
	for _, tt := range []struct {
		name   string
		ld     string
		bi     *debug.BuildInfo
		want   Info
		prints string
	}{
		{
			name:   "ldflags win",
			ld:     "v0.3.0-2-g3bdd6f3c4d0a",
			bi:     &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "false")},
			want:   Info{Version: "v0.3.0-2-g3bdd6f3c4d0a", Revision: rev, GoVersion: "go1.26.8"},
			prints: "vipstack v0.3.0-2-g3bdd6f3c4d0a (go1.26.8)",
		},
		{
			name:   "toolchain pseudo-version",
			bi:     &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261124114607-3bdd6f3c4d0a+dirty"}, Settings: vcs(rev, "true")},
			want:   Info{Version: "v0.0.0-20261124114607-3bdd6f3c4d0a+dirty", Revision: rev, Modified: true, GoVersion: "go1.26.8"},
			prints: "vipstack v0.0.0-20261124114607-3bdd6f3c4d0a+dirty (go1.26.8)",
		},
		{
			name:   "revision only",
			bi:     &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "true")},
			want:   Info{Version: "v0.0.0-g3bdd6f3c4d0a-dirty", Revision: rev, Modified: true, GoVersion: "go1.26.8"},
			prints: "vipstack v0.0.0-g3bdd6f3c4d0a-dirty (go1.26.8)",
		},
		{
			name:   "ldflags version that does not name the revision",
			ld:     "v0.3.0",
			bi:     &debug.BuildInfo{GoVersion: "go1.26.8", Settings: vcs(rev, "true")},
			want:   Info{Version: "v0.3.0", Revision: rev, Modified: true, GoVersion: "go1.26.8"},
			prints: "vipstack v0.3.0 (commit " + rev + " (modified), go1.26.8)",
		},
		{
			name:   "nothing recorded",
			bi:     &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			want:   Info{Version: "v0.0.0-unknown", GoVersion: "go1.26.8"},
			prints: "vipstack v0.0.0-unknown (go1.26.8, built without version information: build with hack/build.sh, or go build -buildvcs=true in a git checkout)",
		},
		{
			name: "no build info",
			want: Info{Version: "v0.0.0-unknown"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := fromBuild(tt.ld, tt.bi)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got.Version == "dev" || got.Version == "" {
				t.Errorf("version %q", got.Version)
			}
			if tt.prints != "" && got.String() != tt.prints {
				t.Errorf("String() = %q, want %q", got.String(), tt.prints)
			}
		})
	}
}

func TestTag(t *testing.T) {
	for in, want := range map[string]string{
		"v0.3.0-2-g3bdd6f3c4d0a":                   "v0.3.0-2-g3bdd6f3c4d0a",
		"v0.0.0-20261124114607-3bdd6f3c4d0a+dirty": "v0.0.0-20261124114607-3bdd6f3c4d0a-dirty",
		"-x":                     "x",
		"":                       "unknown",
		strings.Repeat("a", 200): strings.Repeat("a", 128),
	} {
		if got := Tag(in); got != want {
			t.Errorf("Tag(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDescribe(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.test", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(name, s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run("init", "-q")
	if _, err := Describe(dir); err == nil {
		t.Error("Describe of a repository without commits: no error")
	}
	write("a", "1")
	run("add", "a")
	run("commit", "-q", "-m", "one")
	write("a", "2")
	run("commit", "-q", "-am", "two")

	check := func(want string) {
		t.Helper()
		got, err := Describe(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile("^" + want + "$").MatchString(got) {
			t.Errorf("Describe = %q, want %s", got, want)
		}
	}
	check(`v0\.0\.0-2-g[0-9a-f]{12}`)
	write("a", "3")
	check(`v0\.0\.0-2-g[0-9a-f]{12}-dirty`)
	write("untracked", "x") // untracked files do not make a tree dirty
	run("commit", "-q", "-am", "three")
	check(`v0\.0\.0-3-g[0-9a-f]{12}`)
	run("tag", "not-a-version")
	check(`v0\.0\.0-3-g[0-9a-f]{12}`)
	run("tag", "-a", "-m", "release", "v0.3.0")
	check(`v0\.3\.0`)
	write("a", "4")
	run("commit", "-q", "-am", "four")
	check(`v0\.3\.0-1-g[0-9a-f]{12}`)
	write("a", "5")
	check(`v0\.3\.0-1-g[0-9a-f]{12}-dirty`)

	if _, err := Describe(t.TempDir()); err == nil || !strings.Contains(err.Error(), "git rev-parse") {
		t.Errorf("Describe outside a checkout: err %v, want git's refusal", err)
	}
}

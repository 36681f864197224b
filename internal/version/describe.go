package version

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Describe returns the version of the git checkout at dir as release
// builds stamp it: `git describe --tags --dirty` against the newest tag
// v<MAJOR>.<MINOR>.<PATCH> (v0.3.0, v0.3.0-12-g3bdd6f3c4d0a,
// v0.3.0-12-g3bdd6f3c4d0a-dirty). In a history with no such tag it is
// written the same way from v0.0.0 and the count of commits:
// v0.0.0-508-g3bdd6f3c4d0a. Uncommitted changes to tracked files make it
// "-dirty".
func Describe(dir string) (string, error) {
	if v, err := git(dir, "describe", "--tags", "--dirty", "--abbrev=12", "--match", "v[0-9]*.[0-9]*.[0-9]*"); err == nil {
		return v, nil
	}
	rev, err := git(dir, "rev-parse", "--short=12", "HEAD")
	if err != nil {
		return "", err
	}
	count, err := git(dir, "rev-list", "--count", "HEAD")
	if err != nil {
		return "", err
	}
	v := "v0.0.0-" + count + "-g" + rev
	// The same test git describe --dirty makes: tracked files that differ
	// from HEAD, after refreshing the index's stat information.
	if _, err := git(dir, "update-index", "-q", "--refresh"); err != nil {
		return "", err
	}
	if _, err := git(dir, "diff-index", "--quiet", "HEAD", "--"); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			return "", err
		}
		v += "-dirty"
	}
	return v, nil
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", &gitError{args: args, err: err, stderr: strings.TrimSpace(errb.String())}
	}
	return strings.TrimSpace(out.String()), nil
}

type gitError struct {
	args   []string
	err    error
	stderr string
}

func (e *gitError) Error() string {
	if e.stderr == "" {
		return fmt.Sprintf("git %s: %v", strings.Join(e.args, " "), e.err)
	}
	return fmt.Sprintf("git %s: %v: %s", strings.Join(e.args, " "), e.err, e.stderr)
}

func (e *gitError) Unwrap() error { return e.err }

package script

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// insecureHint ends every enable_script_security rejection.
const insecureHint = "with enable_script_security a script run as root and every directory above it must be owned by root and not writable by non-root users"

// maxSymlinks bounds symlink resolution, as the kernel's ELOOP limit.
const maxSymlinks = 40

// Check verifies that argv[0] can be run under sec, as keepalived's
// check_script_secure does when it loads the configuration:
//
//   - a bare name (no slash) is searched in DefaultPath, taking the first
//     regular file the script's user may execute (keepalived warns "Please
//     specify full path"; so should the caller);
//   - the file must exist, be a regular file and be executable by the
//     script's uid:gid (keepalived disables the script otherwise, whether or
//     not enable_script_security is set);
//   - when sec.Enforce is set and the script would run with uid 0 or gid 0,
//     or is set-uid root or set-gid root, the file and every directory from /
//     down to it must be owned by root and not writable by a non-root user:
//     no write bit for others, and no group write bit unless the group is
//     root; a directory with the sticky bit (like /tmp, 1777) is exempt from
//     the write-bit rules, since nobody but root can replace root's files in
//     it. Symlinks are followed; each must be owned by root and the
//     directories on both sides of it are checked.
//
// A script that runs as a non-root user is not path-checked even under
// Enforce, as in keepalived: it cannot do more than that user could do
// anyway. (The man page: "Don't run scripts configured to be run as root if
// any part of the path is writable by a non-root user.")
func (sec Security) Check(argv []string) error {
	_, _, err := sec.resolve(argv, DefaultPath)
	return err
}

// resolve runs Check's steps with the given PATH and returns the absolute
// path to exec and the identity to run it as.
func (sec Security) resolve(argv []string, path string) (string, Identity, error) {
	return sec.resolvePath(argv, path, sec.Enforce)
}

// resolvePath is resolve with the root path check on or off (Unsafe runs it
// on whether or not the configuration enforces it); the identity is sec's.
func (sec Security) resolvePath(argv []string, path string, pathCheck bool) (string, Identity, error) {
	if len(argv) == 0 || argv[0] == "" {
		return "", Identity{}, errors.New("script: empty command; want a program path and optional arguments")
	}
	id, err := sec.Identity()
	if err != nil {
		return "", Identity{}, fmt.Errorf("script %q: %w", argv[0], err)
	}
	name := argv[0]
	if !strings.Contains(name, "/") {
		name, err = lookPath(name, path, id)
		if err != nil {
			return "", id, err
		}
	} else if name, err = filepath.Abs(name); err != nil {
		return "", id, fmt.Errorf("script %q: %w", argv[0], err)
	}
	var st unix.Stat_t
	if err := unix.Stat(name, &st); err != nil {
		return "", id, fmt.Errorf("script %q: %w", argv[0], &fs.PathError{Op: "stat", Path: name, Err: err})
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", id, fmt.Errorf("script %q: %s is not a regular file (mode %s)", argv[0], name, modeString(st.Mode))
	}
	if !executable(&st, id) {
		return "", id, fmt.Errorf("script %q: %s is not executable by uid:gid %d:%d (owner %d:%d, mode %04o); keepalived disables such scripts",
			argv[0], name, id.UID, id.GID, st.Uid, st.Gid, st.Mode&0o7777)
	}
	if !pathCheck || !needsProtection(&st, id) {
		return name, id, nil
	}
	if err := walkSecure(name); err != nil {
		return "", id, &UnsafeError{Script: argv[0], Path: name, Err: err}
	}
	return name, id, nil
}

// UnsafeError is the enable_script_security refusal: the script runs as
// root and a non-root user could change or replace it.
type UnsafeError struct {
	Script string // argv[0] as given
	Path   string // the file it resolved to
	Err    error  // which path element, and why
}

func (e *UnsafeError) Error() string { return fmt.Sprintf("script %q: %v", e.Script, e.Err) }
func (e *UnsafeError) Unwrap() error { return e.Err }

// Unsafe returns the refusal Check would give with enable_script_security
// set: nil when the script is safe, runs as a non-root user, or cannot run
// at all (Check says why). keepalived 2.2.7 without enable_script_security
// runs such a script anyway and logs "Unsafe permissions found for script
// 'PATH'." (measured for a world-writable script, one writable by a
// non-root group and one owned by a non-root user), so its callers warn.
func (sec Security) Unsafe(argv []string) *UnsafeError {
	_, _, err := sec.resolvePath(argv, DefaultPath, true)
	var ue *UnsafeError
	if errors.As(err, &ue) {
		return ue
	}
	return nil
}

// needsProtection mirrors keepalived: the path check applies when the script
// runs with root's uid or gid, or is set-uid/set-gid root.
func needsProtection(st *unix.Stat_t, id Identity) bool {
	return id.Root() ||
		(st.Uid == 0 && st.Mode&unix.S_IXUSR != 0 && st.Mode&unix.S_ISUID != 0) ||
		(st.Gid == 0 && st.Mode&unix.S_IXGRP != 0 && st.Mode&unix.S_ISGID != 0)
}

// executable is keepalived's is_executable: root may run any file with an
// execute bit; otherwise the owner, group or other bit applies (supplementary
// groups are cleared before exec, so they do not count).
func executable(st *unix.Stat_t, id Identity) bool {
	m := st.Mode
	switch {
	case id.UID == 0:
		return m&(unix.S_IXUSR|unix.S_IXGRP|unix.S_IXOTH) != 0
	case id.UID == st.Uid:
		return m&unix.S_IXUSR != 0
	case id.GID == st.Gid:
		return m&unix.S_IXGRP != 0
	default:
		return m&unix.S_IXOTH != 0
	}
}

// lookPath searches path for an executable regular file called name, as
// keepalived's find_path (a copy of glibc's execvp search). Relative and
// empty PATH entries are skipped: a script's location must not depend on
// vipstack's working directory.
func lookPath(name, path string, id Identity) (string, error) {
	denied := ""
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil {
			continue
		}
		if st.Mode&unix.S_IFMT == unix.S_IFREG && executable(&st, id) {
			return p, nil
		}
		if denied == "" {
			denied = p
		}
	}
	if denied != "" {
		return "", fmt.Errorf("script %q: %s is not an executable file for uid:gid %d:%d, and no other match in PATH %q", name, denied, id.UID, id.GID, path)
	}
	return "", fmt.Errorf("script %q: not found in PATH %q; give the full path", name, path)
}

// walkSecure resolves the absolute path abs one component at a time from /,
// following symlinks, and checks each directory, symlink and the final file
// with secure.
func walkSecure(abs string) error {
	var st unix.Stat_t
	if err := unix.Stat("/", &st); err != nil {
		return &fs.PathError{Op: "stat", Path: "/", Err: err}
	}
	if err := secure("/", &st); err != nil {
		return err
	}
	cur := "/"
	rest := strings.Split(abs, "/")
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		if err := unix.Lstat(next, &st); err != nil {
			return &fs.PathError{Op: "lstat", Path: next, Err: err}
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			if links++; links > maxSymlinks {
				return &fs.PathError{Op: "resolve", Path: abs, Err: unix.ELOOP}
			}
			if st.Uid != 0 {
				return fmt.Errorf("symlink %s is owned by uid %d, not root; %s", next, st.Uid, insecureHint)
			}
			target, err := os.Readlink(next)
			if err != nil {
				return err
			}
			if filepath.IsAbs(target) {
				cur = "/"
			}
			rest = append(strings.Split(target, "/"), rest...)
			continue
		}
		if err := secure(next, &st); err != nil {
			return err
		}
		cur = next
	}
	return nil
}

// secure is the test from keepalived's check_script_secure for one path
// element: owned by root, and unless it is a sticky directory, not writable
// by a non-root group or by others.
func secure(name string, st *unix.Stat_t) error {
	if st.Uid != 0 {
		return fmt.Errorf("%s is owned by uid %d, not root; %s", name, st.Uid, insecureHint)
	}
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if isDir && st.Mode&unix.S_ISVTX != 0 {
		return nil
	}
	if st.Gid != 0 && st.Mode&unix.S_IWGRP != 0 {
		return fmt.Errorf("%s is writable by group %d (mode %04o); %s", name, st.Gid, st.Mode&0o7777, insecureHint)
	}
	if st.Mode&unix.S_IWOTH != 0 {
		return fmt.Errorf("%s is writable by others (mode %04o); %s", name, st.Mode&0o7777, insecureHint)
	}
	return nil
}

func modeString(m uint32) string {
	kinds := map[uint32]string{
		unix.S_IFDIR: "directory", unix.S_IFCHR: "character device", unix.S_IFBLK: "block device",
		unix.S_IFIFO: "fifo", unix.S_IFSOCK: "socket", unix.S_IFLNK: "symlink",
	}
	return fmt.Sprintf("%s %04o", kinds[m&unix.S_IFMT], m&0o7777)
}

package pages

import (
	"errors"
	"io"
	"os"
	"strconv"
	"syscall"
)

// Mapping is one mapping of /proc/PID/smaps.
type Mapping struct {
	Start, End uintptr
	Perms      string // "r-xp", "r--p", ...
	Path       string
	Anonymous  int // kB of the mapping's pages that are private copies
}

// lineMax bounds a line of smaps: a mapping's line is its address range,
// permissions, offset, device and inode (at most 94 bytes on 64-bit Linux)
// then its path, at most PATH_MAX (4096) bytes.
const lineMax = 8 << 10

// parseSmaps reads the mappings of a /proc/PID/smaps text from r. It
// reads through one buffer of lineMax bytes and keeps only each
// mapping's header and its Anonymous figure: the small supervisor calls
// it with its collector off, where whatever it allocates stays
// (docs/design/memory.md), and the file is tens of kB for a few dozen
// mappings.
func parseSmaps(r io.Reader) ([]Mapping, error) {
	var out []Mapping
	err := scanLines(r, make([]byte, lineMax), func(n int, line []byte) error {
		if len(line) == 0 {
			return nil
		}
		if c := line[0]; c >= 'A' && c <= 'Z' {
			// A field of the mapping above ("Rss:", "VmFlags:"); mapping
			// lines start with a lower-case hex address.
			v, ok := cutPrefix(line, "Anonymous:")
			if !ok || len(out) == 0 {
				return nil
			}
			num, _ := nextField(v)
			kb, err := strconv.Atoi(string(num))
			if err != nil {
				return smapsError(n, "Anonymous "+strconv.Quote(string(num))+": want kB")
			}
			out[len(out)-1].Anonymous = kb
			return nil
		}
		m, err := parseMapping(line)
		if err != nil {
			return smapsError(n, err.Error())
		}
		out = append(out, m)
		return nil
	})
	return out, err
}

// parseMapping parses the line that starts a mapping: START-END PERMS
// OFFSET DEV INODE [PATH], the path as the kernel printed it (it may hold
// spaces).
func parseMapping(line []byte) (Mapping, error) {
	rng, rest := nextField(line)
	perms, rest := nextField(rest)
	var n int
	for ; n < 3; n++ {
		var f []byte
		if f, rest = nextField(rest); len(f) == 0 {
			break
		}
	}
	dash := indexByte(rng, '-')
	if dash < 0 || len(perms) == 0 || n < 3 {
		return Mapping{}, errors.New(strconv.Quote(string(line)) + ": want START-END PERMS OFFSET DEV INODE [PATH]")
	}
	s, err1 := strconv.ParseUint(string(rng[:dash]), 16, 64)
	e, err2 := strconv.ParseUint(string(rng[dash+1:]), 16, 64)
	if err1 != nil || err2 != nil || e <= s {
		return Mapping{}, errors.New("address range " + strconv.Quote(string(rng)) + ": want START-END in hex")
	}
	m := Mapping{Start: uintptr(s), End: uintptr(e), Perms: permsText(perms)}
	if path := trimBlanks(rest); len(path) > 0 {
		m.Path = string(path)
	}
	return m, nil
}

// permsText is perms as a string, without allocating for the usual ones.
func permsText(perms []byte) string {
	for _, p := range [...]string{"r-xp", "r--p", "rw-p", "---p", "rwxp", "r--s", "rw-s"} {
		if string(perms) == p {
			return p
		}
	}
	return string(perms)
}

// smapsError is the error for line n of an smaps text.
func smapsError(n int, msg string) error {
	return errors.New("smaps line " + strconv.Itoa(n) + ": " + msg)
}

// scanLines calls f with each line of r (without its newline), numbered
// from 1, reading through buf; a line longer than buf is an error. It
// stops at f's first error and returns it.
func scanLines(r io.Reader, buf []byte, f func(n int, line []byte) error) error {
	n, have := 0, 0
	for {
		read, err := r.Read(buf[have:])
		have += read
		start := 0
		for {
			i := indexByte(buf[start:have], '\n')
			if i < 0 {
				break
			}
			n++
			if ferr := f(n, buf[start:start+i]); ferr != nil {
				return ferr
			}
			start += i + 1
		}
		have = copy(buf, buf[start:have])
		switch {
		case err == io.EOF:
			if have > 0 {
				return f(n+1, buf[:have])
			}
			return nil
		case err != nil:
			return err
		case have == len(buf):
			return smapsError(n+1, "longer than "+strconv.Itoa(len(buf))+" bytes")
		}
	}
}

// nextField returns the first run of non-blanks in s (spaces and tabs:
// smaps has no other blanks) and what follows it.
func nextField(s []byte) (field, rest []byte) {
	s = trimLeft(s)
	i := 0
	for i < len(s) && s[i] != ' ' && s[i] != '\t' {
		i++
	}
	return s[:i], s[i:]
}

// trimLeft drops the blanks that start s.
func trimLeft(s []byte) []byte {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	return s
}

// trimBlanks drops the blanks around s.
func trimBlanks(s []byte) []byte {
	s = trimLeft(s)
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// cutPrefix returns s without prefix and whether s started with it.
func cutPrefix(s []byte, prefix string) ([]byte, bool) {
	if len(s) < len(prefix) || string(s[:len(prefix)]) != prefix {
		return s, false
	}
	return s[len(prefix):], true
}

// indexByte is the index of the first c in s, or -1.
func indexByte(s []byte, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// droppable picks the mappings of path whose pages can be dropped and read
// back from the file unchanged: private, never writable (text, read-only
// data, pclntab), and holding no private copy of a page (a relocated
// read-only segment of a position-independent build has them: dropping
// those would lose the relocations).
func droppable(ms []Mapping, path string) []Mapping {
	var out []Mapping
	for _, m := range ms {
		if m.Path != path || len(m.Perms) != 4 || m.Perms[1] != '-' || m.Perms[3] != 'p' || m.Anonymous != 0 {
			continue
		}
		out = append(out, m)
	}
	return out
}

// Executable drops this process's page-table entries for the read-only
// mappings of its executable (MADV_DONTNEED). The pages stay in the page
// cache; those the process uses again are mapped back on first touch, so
// its resident set becomes what it runs from then on, not everything the
// initialisation of every linked package touched once. It returns the
// bytes of address space released (not all of it was resident).
func Executable() (uintptr, error) {
	ms, err := Droppable()
	if err != nil {
		return 0, err
	}
	return Drop(ms)
}

// Droppable are the mappings of this process's executable that
// Executable drops.
func Droppable() ([]Mapping, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ms, err := parseSmaps(f)
	if err != nil {
		return nil, err
	}
	return droppable(ms, exe), nil
}

// Drop drops the page-table entries of ms and returns the bytes of address
// space released. Where the kernel allows it (NoFaultAround), the pages
// the process touches again come back one at a time; otherwise 64 KiB at
// a time, and Drop does not fail for that.
func Drop(ms []Mapping) (uintptr, error) {
	_ = NoFaultAround(ms)
	var n uintptr
	for _, m := range ms {
		// By address: the range is not Go memory, so no slice stands for it.
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, m.Start, m.End-m.Start, syscall.MADV_DONTNEED); e != 0 {
			return n, os.NewSyscallError("madvise "+hex(m.Start)+"-"+hex(m.End)+" "+m.Perms+" "+m.Path, e)
		}
		n += m.End - m.Start
	}
	return n, nil
}

// NotExecutable picks the mappings of ms that hold no code.
func NotExecutable(ms []Mapping) []Mapping {
	var out []Mapping
	for _, m := range ms {
		if len(m.Perms) == 4 && m.Perms[2] != 'x' {
			out = append(out, m)
		}
	}
	return out
}

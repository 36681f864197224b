package pages

import (
	"errors"
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

// parseSmaps reads the mappings of a /proc/PID/smaps text.
func parseSmaps(smaps string) ([]Mapping, error) {
	var out []Mapping
	for n, rest := 1, smaps; rest != ""; n++ {
		var line string
		line, rest = cutLine(rest)
		f := fields(line)
		if len(f) == 0 {
			continue
		}
		if k := f[0]; k[len(k)-1] == ':' {
			if k == "Anonymous:" && len(out) > 0 && len(f) > 1 {
				kb, err := strconv.Atoi(f[1])
				if err != nil {
					return nil, smapsError(n, "Anonymous "+strconv.Quote(f[1])+": want kB")
				}
				out[len(out)-1].Anonymous = kb
			}
			continue
		}
		dash := indexByte(f[0], '-')
		if dash < 0 || len(f) < 5 {
			return nil, smapsError(n, strconv.Quote(line)+": want START-END PERMS OFFSET DEV INODE [PATH]")
		}
		s, err1 := strconv.ParseUint(f[0][:dash], 16, 64)
		e, err2 := strconv.ParseUint(f[0][dash+1:], 16, 64)
		if err1 != nil || err2 != nil || e <= s {
			return nil, smapsError(n, "address range "+strconv.Quote(f[0])+": want START-END in hex")
		}
		m := Mapping{Start: uintptr(s), End: uintptr(e), Perms: f[1]}
		if len(f) > 5 {
			m.Path = f[5]
			for _, w := range f[6:] {
				m.Path += " " + w
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// smapsError is the error for line n of an smaps text.
func smapsError(n int, msg string) error {
	return errors.New("smaps line " + strconv.Itoa(n) + ": " + msg)
}

// cutLine splits s after its first line, dropping the newline.
func cutLine(s string) (line, rest string) {
	if i := indexByte(s, '\n'); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

// fields splits s at runs of spaces and tabs (smaps has no other blanks).
func fields(s string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		blank := i == len(s) || s[i] == ' ' || s[i] == '\t'
		switch {
		case blank && start >= 0:
			out = append(out, s[start:i])
			start = -1
		case !blank && start < 0:
			start = i
		}
	}
	return out
}

// indexByte is the index of the first c in s, or -1.
func indexByte(s string, c byte) int {
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
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return nil, err
	}
	ms, err := parseSmaps(string(b))
	if err != nil {
		return nil, err
	}
	return droppable(ms, exe), nil
}

// Drop drops the page-table entries of ms and returns the bytes of address
// space released.
func Drop(ms []Mapping) (uintptr, error) {
	var n uintptr
	for _, m := range ms {
		// By address: the range is not Go memory, so no slice stands for it.
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, m.Start, m.End-m.Start, syscall.MADV_DONTNEED); e != 0 {
			hex := func(p uintptr) string { return strconv.FormatUint(uint64(p), 16) }
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

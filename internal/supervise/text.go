package supervise

// The few string functions this package needs, in place of package
// strings: strings imports unicode, which Go initialises late (its path
// sorts after those of most linked packages ready at the same time), and
// with it the small supervisor ran 94th instead of about 30th
// (docs/design/memory.md).

// cut slices s around the first sep: before, after, and whether sep is in
// s (strings.Cut for one byte).
func cut(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// equalFoldASCII reports whether a and b are equal but for the case of
// ASCII letters.
func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

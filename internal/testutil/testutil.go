// Package testutil holds small helpers the tests of several packages
// share: the last lines of a log to print on failure.
package testutil

import "strings"

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// Package benchdoc writes a bench's results into docs/benchmarks.md: tables
// printed aligned on a terminal or as Markdown, the facts of the machine a
// run used, and the replacement of a bench's generated block in the page,
// so the page holds what the benches printed rather than pasted text.
package benchdoc

// Package memtrim gives back the memory a long-running vipstack process
// touched only while it started: the pages of its own executable that the
// initialisation of every linked package mapped in, and the heap that
// parsing the configuration left behind. The dropping of pages itself is
// package pages, which the small supervisor uses from the initialisation.
// See docs/design/memory.md.
package memtrim

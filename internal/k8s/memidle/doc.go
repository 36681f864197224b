// Package memidle gives back the memory a burst of work left behind once
// the process is quiet again: the Kubernetes controller and agents hold
// little at rest, but a thousand Services created at once leave them with
// freed heap the Go runtime returns only slowly and with the pages of their
// executable that the burst ran (internal/memtrim, docs/design/memory.md).
package memidle

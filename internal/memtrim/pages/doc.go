// Package pages drops this process's page-table entries for the read-only
// mappings of its own executable (MADV_DONTNEED), so that its resident set
// becomes what it runs from then on (see package memtrim). It imports only
// light packages, not even strings: the small supervisor uses it from the
// initialisation, where every package it imports is initialised before it
// (docs/design/memory.md).
package pages

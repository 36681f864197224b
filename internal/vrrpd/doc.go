// Package vrrpd is what `vipstack vrrp` runs: its flags, and the VRRP
// engine (internal/engine) on a keepalived.conf with its endpoints,
// keepalived-exporter's dump files, SIGHUP as a reload and memory given
// back at rest. The command (cmd/vipstack) checks the file and
// supervises; the engine under its supervisor runs from the
// initialisation (package vrrpd/early), before the packages vipstack
// links for its other commands initialise (docs/design/memory.md).
package vrrpd

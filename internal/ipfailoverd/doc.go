// Package ipfailoverd is what `vipstack ipfailover` runs: its flags, and
// this node's part of the pool (internal/ipfailover) with its endpoints,
// SIGHUP logged and ignored, and memory given back at rest. The command
// (cmd/vipstack) prints the configuration, claims the pool's name and
// supervises; the engine under its supervisor runs from the
// initialisation (package ipfailoverd/early), before the packages vipstack
// links for its other commands initialise, unless the pool is announced by
// BGP (docs/design/memory.md).
package ipfailoverd

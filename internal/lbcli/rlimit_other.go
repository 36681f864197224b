//go:build !linux

package lbcli

// openFilesLimit is not read outside Linux (the load balancer runs on
// Linux only): `show info` writes Ulimit-n 0 there.
func openFilesLimit() (uint64, bool) { return 0, false }

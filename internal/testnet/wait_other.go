//go:build !linux

package testnet

// waitExited has nothing to wait for: topologies need Linux's network
// namespaces, so no process was started in one.
func waitExited(int) {}

// Package supervise runs vipstack's engine as a child of a small supervisor
// process (the same binary), so that when the engine dies unexpectedly -
// kill -9, a panic, the OOM killer - what it held is released at once: the
// supervisor removes the VIPs recorded in the engine's ledger the moment the
// child is gone, then starts a new engine. keepalived has the same
// parent/child split but leaves the VIPs of a crashed child in place.
//
// As process 1 (a container's first process) the supervisor also reaps
// every other process that becomes its child: the orphans of the engine's
// scripts (see reaper).
package supervise

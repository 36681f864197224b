// Package supervise runs vipstack's engine as a child of a small supervisor
// process (the same binary), so that when the engine dies unexpectedly -
// kill -9, a panic, the OOM killer - what it held is released at once: the
// supervisor removes the VIPs recorded in the engine's ledger the moment the
// child is gone, then starts a new engine. keepalived has the same
// parent/child split but leaves the VIPs of a crashed child in place.
//
// `vipstack node` replaces itself (ExecSupervisor, same pid) by the binary
// run again as the supervisor from its initialisation (package
// supervise/early), before most linked packages initialise, so that the
// supervisor keeps little memory; the release after a crash then runs in
// a short-lived process of the same binary (EnvCleanup), from its
// initialisation too when the Spec names what to release (package
// cleanup).
//
// As process 1 (a container's first process) the supervisor also reaps
// every other process that becomes its child: the orphans of the engine's
// scripts (see reaper).
package supervise

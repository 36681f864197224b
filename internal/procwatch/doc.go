// Package procwatch counts the running processes that match keepalived's
// vrrp_track_process rules (a process name against /proc/PID/comm, or a
// command and its parameters against /proc/PID/cmdline) and debounces the
// quorum with keepalived's fork_delay and terminate_delay.
//
// It polls /proc rather than listening on the kernel's process events
// connector as keepalived does: the connector only works in the initial
// network namespace (keepalived 2.2.7 in any other logs "Failed to
// set/clear process event listen - errno 111" and never sees a process
// start), and vipstack runs in containers and test namespaces too. A scan
// reads one small file per process (cmdline only for full_command).
package procwatch

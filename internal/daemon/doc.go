// Package daemon is the frame vipstack's long-running commands share:
// their --log-level and --log-format flags, metrics, status and profile
// endpoints, SIGHUP as a reload, and giving back the start-up's memory at
// rest (docs/design/memory.md).
//
// It links nothing heavier than the VRRP engine does (no net/http/pprof:
// profiles are served from runtime/pprof here), so that a package run
// from its initialisation (internal/vrrpd/early) can use it before the
// Kubernetes, CoreDNS and GoBGP packages initialise.
package daemon

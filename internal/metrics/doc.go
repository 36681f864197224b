// Package metrics builds the Prometheus registry every vipstack daemon
// serves: vipstack_build_info, and the Go runtime and process collectors,
// beside the daemon's own series. docs/metrics.md lists every series.
package metrics

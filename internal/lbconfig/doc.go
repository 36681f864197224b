// Package lbconfig is the validated model of vipstack's L4 load balancer:
// frontends, backends with health-checked servers, timeouts, the monitor
// URI and the stats page. The haproxy.cfg reader (package haproxycfg) and
// the native YAML form both produce a Config and pass it through Validate,
// the one conversion every entry point shares.
package lbconfig

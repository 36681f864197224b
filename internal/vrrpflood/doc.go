// Package vrrpflood floods a link with bogus VRRP packets (protocol 112,
// RFC 5798) from a network namespace, and watches which VIPs a namespace
// holds while it does. It is the load generator of internal/engine's
// TestVRRPFlood and of bench/flood, which run the same flood against the
// same two-instance configuration (Conf) so that their figures compare.
package vrrpflood

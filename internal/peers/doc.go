// Package peers runs real VRRP speakers, keepalived and vipstack, on the
// hosts of a testnet topology, for interop tests and benchmarks. Both read
// the same keepalived.conf, rendered by Conf. FRR's vrrpd (with its zebra)
// runs from its own configuration, rendered by FRRConf (StartFRR).
package peers

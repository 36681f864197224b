// Command corednsstock is stock CoreDNS, built from the CoreDNS source
// vipstack's go.mod pins, with the in-tree plugins vipstack's DNS builds in
// (internal/dns Directives: every plugin of CoreDNS's plugin.cfg but
// route53, azure, clouddns, dnssec and trace, which need modules vipstack
// leaves out). Tests run it as the upstream CoreDNS of a node that still
// runs the static pods, and side by side with vipstack's DNS for the same
// answers; it is not part of vipstack.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/vipstack/vipstack/internal/dns/stockplugins"
)

// CoreDNS's directive order (core/dnsserver's Directives, generated from
// its plugin.cfg) is the release binary's; importing a plugin registers
// it in that order.
func main() { coremain.Run() }

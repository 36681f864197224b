// Command corednsstock is CoreDNS as its release binary runs it, built
// from the CoreDNS source vipstack's go.mod pins, with the in-tree plugins
// that the Corefile `vipstack render` writes uses (the release binary has
// these and many more). Tests run it as the upstream CoreDNS of a node
// that still runs the static pods; it is not part of vipstack.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bufsize"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/template"
)

// CoreDNS's directive order (core/dnsserver's Directives, generated from
// its plugin.cfg) is the release binary's; importing a plugin registers
// it in that order.
func main() { coremain.Run() }

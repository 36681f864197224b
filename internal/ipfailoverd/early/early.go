// Package early runs the pool of `vipstack ipfailover` under its
// supervisor from its package initialisation (ipfailoverd.FromSupervisor),
// which Go orders before that of the Kubernetes, CoreDNS and GoBGP
// packages vipstack links for its other commands: the engine then never
// holds their initialisation's heap. A pool announced by BGP is left to
// main. The clean-up the supervisor runs after a crash runs here too,
// by VRRP or BGP: the pool's VIPs leave the node without waiting for
// those packages. Package main imports it for that effect alone. See
// docs/design/memory.md.
package early

import (
	"os"

	"github.com/vipstack/vipstack/internal/ipfailoverd"
)

func init() {
	if code, ok := ipfailoverd.FromSupervisor(); ok {
		os.Exit(code)
	}
}

// Package early runs the engine of `vipstack vrrp` under its supervisor
// from its package initialisation (vrrpd.FromSupervisor), which Go
// orders before that of the Kubernetes, CoreDNS and GoBGP packages
// vipstack links for its other commands: the engine then never holds
// their initialisation's heap. Package main imports it for that effect
// alone. See docs/design/memory.md.
package early

import (
	"os"

	"github.com/vipstack/vipstack/internal/vrrpd"
)

func init() {
	if code, ok := vrrpd.FromSupervisor(); ok {
		os.Exit(code)
	}
}

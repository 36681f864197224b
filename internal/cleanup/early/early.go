// Package early runs the clean-up a small supervisor starts after its
// child crashed (cleanup.FromSupervisor) from its package
// initialisation, which Go orders before that of the Kubernetes, CoreDNS
// and GoBGP packages vipstack links for its other commands: the VIPs of
// the crashed engine leave the node without waiting for those. Package
// main imports it for that effect alone. See docs/design/memory.md.
package early

import (
	"os"

	"github.com/vipstack/vipstack/internal/cleanup"
)

func init() {
	if code, ok := cleanup.FromSupervisor(); ok {
		os.Exit(code)
	}
}

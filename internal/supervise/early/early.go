// Package early runs the supervisor that supervise.ExecSupervisor asks for
// from its package initialisation, which Go orders before that of most of
// what vipstack links (client-go's schemes, CoreDNS, GoBGP): a supervisor
// that only waits for its child then keeps little of the binary resident.
// A command imports it for that effect alone. See docs/design/memory.md.
package early

import (
	"os"

	"github.com/vipstack/vipstack/internal/supervise"
)

// reloads reports whether command takes SIGHUP as a reload: from here on
// a SIGHUP does not end it while it starts (supervise.CatchHUPEarly).
func reloads(command string) bool {
	switch command {
	case "node", "lb", "dns", "vrrp", "ipfailover":
		return true
	}
	return false
}

func init() {
	if len(os.Args) > 1 && reloads(os.Args[1]) {
		supervise.CatchHUPEarly()
	}
	if code, ok := supervise.RunFromEnv(); ok {
		os.Exit(code)
	}
}

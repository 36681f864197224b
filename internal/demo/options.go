package demo

import (
	"io"
	"os/exec"
	"slices"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/testnet"
)

// Options configure a demo cluster.
type Options struct {
	Bin    string    // the vipstack binary the node agents run (required)
	Out    io.Writer // progress and the live view; nil discards them
	Prefix string    // namespace name prefix; default "vsD"
	Clock  clock.Clock
	// View is the live view's refresh period; default 500 ms, negative
	// turns the live view off.
	View     time.Duration
	LogLevel string // the node agents' --log-level; default info
	// Keep (Run only) leaves the cluster running after the story until
	// ctx ends.
	Keep bool
	// Wrap is a command prefix the node agents run under, put after the
	// namespace entry (which needs privileges a wrapper may drop), e.g.
	// capsh dropping every capability but NET_ADMIN, NET_RAW and
	// NET_BIND_SERVICE. Its last element is followed by Bin and the agent's
	// arguments. Empty: Bin runs directly.
	Wrap []string
	// Topology, if set, is where Start puts the cluster instead of building
	// its own: it needs a host for each node of the Spec (in Spec.Nodes'
	// order, at testnet's addresses) and a client. Close leaves it to its
	// owner.
	Topology *testnet.Topology
	// NoAgents leaves the node agents to someone else (internal/nodelab's
	// kubelets run them as static pods): Start runs the stand-in servers
	// and the live view only, and Bin is not needed. Crash and Shutdown
	// then stop the stand-ins and pull the cable only.
	NoAgents bool
}

// command builds argv, prefixed with Wrap, with mk (a testnet.Host's
// Command, which enters the node's namespace first).
func (o Options) command(mk func(name string, args ...string) *exec.Cmd, argv ...string) *exec.Cmd {
	argv = append(slices.Clip(o.Wrap), argv...)
	return mk(argv[0], argv[1:]...)
}

// Result is what Run reports besides its error.
type Result struct {
	Tag     string // the namespaces' shared tag (all removed when Run returns)
	Dir     string // the work directory (removed when Run returns)
	Steps   int    // steps that held
	Elapsed time.Duration
}

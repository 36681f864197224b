package demo

import (
	"io"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
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
}

// Result is what Run reports besides its error.
type Result struct {
	Tag     string // the namespaces' shared tag (all removed when Run returns)
	Dir     string // the work directory (removed when Run returns)
	Steps   int    // steps that held
	Elapsed time.Duration
}

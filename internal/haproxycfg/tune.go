package haproxycfg

import (
	"strconv"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// tune reads global's tune.* lines (docs/haproxy-cfg.md says what each
// does in vipstack).
func (p *parser) tune(l line, kw string) bool {
	switch kw {
	case "tune.bufsize":
		if n, ok := p.tuneInt(l, kw, lbconfig.MinBufSize, lbconfig.MaxBufSize); ok {
			p.cfg.BufSize = n
		}
	case "tune.maxrewrite":
		if n, ok := p.tuneInt(l, kw, 0, lbconfig.MaxBufSize); ok {
			p.cfg.MaxRewrite = &n
		}
	case "tune.maxaccept":
		// How many connections haproxy accepts in a row before it
		// serves others: a matter of scheduling, not of what a client
		// sees. vipstack's listeners each accept in a goroutine of their
		// own; the value is checked and has no effect.
		if !p.once(l, kw) {
			return true
		}
		if args, ok := p.nargs(l, 1, 1, 1, "a number of connections, or -1 for no limit"); ok {
			if n, err := strconv.ParseInt(args[0], 10, 32); err != nil || n < -1 {
				p.errorf(l, kw, "tune.maxaccept %q is not a number of connections (accepted: -1 for no limit, 0 or more)", args[0])
			}
		}
	default:
		return false
	}
	return true
}

// tuneInt reads the one integer of a tune line, in lo..hi. haproxy's own
// message for a value that is not a positive integer comes first.
func (p *parser) tuneInt(l line, kw string, lo, hi int) (int, bool) {
	if !p.once(l, kw) {
		return 0, false
	}
	args, ok := p.nargs(l, 1, 1, 1, "a number of bytes")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(args[0], 10, 32)
	if err != nil || n < 0 || n == 0 && kw == "tune.bufsize" {
		p.errorf(l, kw, "'%s' expects a positive integer argument (accepted: %d..%d bytes)", kw, lo, hi)
		return 0, false
	}
	if int(n) < lo || int(n) > hi {
		p.errorf(l, kw, "%s %d is out of vipstack's range (accepted: %d..%d bytes)", kw, n, lo, hi)
		return 0, false
	}
	return int(n), true
}

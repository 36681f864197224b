package haproxycfg

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// moreGlobal reads the global settings added for issue 27.
func (p *parser) moreGlobal(l line, kw string) bool {
	switch kw {
	case "ulimit-n":
		if v, ok := p.oneArg(l, kw, "a number of open files"); ok {
			// 0 is haproxy's automatic limit: the one vipstack sets
			// without ulimit-n.
			if n, ok := p.intArg(l, kw, v, 0, "0 or more"); ok {
				p.cfg.UlimitN = n
			}
		}
	case "node", "description":
		// The node's name and description, which the stats page shows
		// with `stats show-node` and `stats show-desc` without their own
		// (endFile). The description is the rest of the line.
		if !p.once(l, kw) {
			return true
		}
		if len(l.words) < 2 {
			p.errorf(l, kw, "%s needs a value (accepted: %s TEXT)", kw, kw)
			return true
		}
		p.state["global "+kw] = strings.Join(l.words[1:], " ")
	case "spread-checks":
		if v, ok := p.oneArg(l, kw, "a percentage, 0..50"); ok {
			n, ok := p.intArg(l, kw, v, 0, "0..50")
			if ok && n > 50 {
				p.errorf(l, kw, "spread-checks %d is out of range (accepted: 0..50)", n)
				return true
			}
			p.cfg.SpreadChecks = n
		}
	case "hard-stop-after":
		if v, ok := p.oneArg(l, kw, "a time such as 30s"); ok {
			if d, ok := p.timeArg(l, kw, v, msUnit); ok {
				p.cfg.HardStopAfter = d
			}
		}
	case "log-send-hostname":
		if !p.once(l, kw) {
			return true
		}
		args, ok := p.nargs(l, 1, 0, 1, "an optional host name")
		if !ok {
			return true
		}
		if len(args) == 1 {
			p.cfg.LogHostname = args[0]
		} else if h, err := os.Hostname(); err == nil {
			p.cfg.LogHostname = h
		}
	case "tune.ssl.default-dh-param":
		// The DH parameters of `bind ... ssl` with DHE ciphers;
		// vipstack refuses ssl binds, so they apply to nothing, as in
		// haproxy without them.
		if v, ok := p.oneArg(l, kw, "a number of bits such as 2048"); ok {
			if n, ok := p.intArg(l, kw, v, 1024, "1024 or more"); ok && n > 0 {
				p.source(lbconfig.ItemKey("global", kw), l)
			}
		}
	case "server-state-file", "server-state-base":
		// Read only by `load-server-state-from-file`, which vipstack
		// refuses: no effect, as in haproxy without it, but for
		// haproxy's warning when the file does not open (stateFile).
		if v, ok := p.oneArg(l, kw, "a file name"); ok {
			p.state[kw] = v
			if kw == "server-state-file" {
				p.stateLine = l.num
			}
		}
	default:
		return p.externalCheckGlobal(l, kw) // extcheck.go
	}
	return true
}

// stateFile gives haproxy 2.6's warning when global's server-state-file
// does not open (measured: haproxy opens it at start even without
// load-server-state-from-file): the name under server-state-base when
// it is relative and a base is set.
func (p *parser) stateFile() {
	name := p.state["server-state-file"]
	if name == "" {
		return
	}
	if base := p.state["server-state-base"]; base != "" && !filepath.IsAbs(name) {
		name = strings.TrimSuffix(base, "/") + "/" + name
	}
	f, err := os.Open(name)
	if err == nil {
		f.Close()
		return
	}
	text := err.Error()
	var errno syscall.Errno
	if errors.As(err, &errno) {
		text = errno.Error()
		text = strings.ToUpper(text[:1]) + text[1:] // strerror's spelling
	}
	p.warnf(line{num: p.stateLine}, "config: Can't open global server state file '%s': %s", name, text)
}

// endNodeDesc gives the stats pages that show the node's name or a
// description without their own global's node and description, as
// haproxy does (the host name when global has no node).
func (p *parser) endNodeDesc() {
	for i := range p.cfg.Stats {
		p.nodeDesc(lbconfig.ListenKey(p.cfg.Stats[i].Name), &p.cfg.Stats[i])
	}
	for _, f := range p.cfg.Frontends {
		if f.HTTP != nil && f.HTTP.Stats != nil {
			p.nodeDesc(lbconfig.FrontendKey(f.Name), f.HTTP.Stats)
		}
	}
}

func (p *parser) nodeDesc(key string, st *lbconfig.Stats) {
	if st.ShowNode && st.Node == "" {
		st.Node = p.state["global node"]
	}
	at, ok := p.state["show-desc "+key]
	if !ok {
		return
	}
	st.Desc = p.state["global description"]
	if st.Desc == "" {
		n, _ := strconv.Atoi(at)
		p.errorf(line{num: n}, "stats", "stats show-desc needs a description: it has none and global has no description (accepted: stats show-desc TEXT, or global's description TEXT)")
	}
}

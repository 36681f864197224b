package haproxycfg

import "github.com/vipstack/vipstack/internal/lbconfig"

// External checks: global's `external-check` and `insecure-fork-wanted`,
// a backend's or listen's `option external-check` and its `external-check
// command PROGRAM` and `external-check path DIRS`, read as haproxy 2.6
// reads them. The option is a check type like httpchk (the last one
// written wins, checktype.go); command and path are kept whatever the
// type, and used only with the option.

// externalCheckGlobal reads global's external-check and
// insecure-fork-wanted; it reports whether kw was one of them.
func (p *parser) externalCheckGlobal(l line, kw string) bool {
	var dst *bool
	switch kw {
	case "external-check":
		dst = &p.cfg.ExternalCheck
	case "insecure-fork-wanted":
		dst = &p.cfg.InsecureForkWanted
	case "localpeer":
		if args, ok := p.nargs(l, 1, 1, 1, "the local peer's name"); ok {
			p.cfg.LocalPeer = args[0]
		}
		return true
	default:
		return false
	}
	if len(l.words) > 1 {
		p.errorf(l, kw, "'%s' cannot handle unexpected argument '%s'. (accepted: %s alone)", kw, l.words[1], kw)
		return true
	}
	*dst = true
	p.source(lbconfig.ItemKey("global", kw), l)
	return true
}

// externalCheckProxy reads `option external-check` and `external-check
// command|path` in a backend or listen; it reports whether kw was one of
// them.
func (p *parser) externalCheckProxy(l line, kw string) bool {
	switch kw {
	case "option external-check":
		if _, ok := p.nargs(l, 2, 0, 0, ""); ok {
			p.source(lbconfig.ItemKey(p.key, kw), l)
			p.checks.option("external-check", l.num)
		}
	case "external-check":
		if len(l.words) < 2 {
			p.errorf(l, kw, "missing argument after '%s'. (accepted: external-check command PROGRAM, external-check path DIRS)", kw)
			return true
		}
		what := l.words[1]
		if what != "command" && what != "path" {
			p.errorf(l, kw, "'%s' only supports 'command' and 'path'. but got '%s'. (accepted: external-check command PROGRAM, external-check path DIRS)", kw, what)
			return true
		}
		switch {
		case len(l.words) < 3 || l.words[2] == "":
			p.errorf(l, kw, "missing argument after '%s'. (accepted: external-check %s VALUE)", what, what)
		case len(l.words) > 3:
			p.errorf(l, kw, "'%s %s' cannot handle unexpected argument '%s'. (accepted: external-check %s VALUE)", kw, what, l.words[3], what)
		case what == "command":
			p.checks.extCommand = l.words[2]
		default:
			p.checks.extPath = l.words[2]
		}
	default:
		return false
	}
	return true
}

// warnInsecureFork is haproxy's warning for each section with external
// checks when global has no insecure-fork-wanted (haproxy then forbids
// its own fork, which fails unless it runs as root; vipstack runs the
// checks either way).
func (p *parser) warnInsecureFork() {
	if p.cfg.InsecureForkWanted {
		return
	}
	for _, at := range p.extChecks {
		p.warnf(line{num: at.line}, "Proxy '%s' : 'insecure-fork-wanted' not enabled in the global section, 'option external-check' will likely fail.", at.name)
	}
}

// nameLine is a section's name and a line in it.
type nameLine struct {
	name string
	line int
}

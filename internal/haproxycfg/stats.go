package haproxycfg

import (
	"slices"
	"strconv"
	"strings"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// statsAdminConds are the conditions `stats admin` takes: haproxy's
// predefined ACLs that need no request data.
const statsAdminConds = "if TRUE, if LOCALHOST, unless FALSE"

// moreStats reads the stats page keywords of a listen section beyond
// stats enable/uri/refresh/hide-version/auth: realm, admin, show-node,
// show-desc, show-legends.
func (p *parser) moreStats(l line, kw string) bool {
	ls := p.ls
	if !p.statsOption(l, kw, &ls.stats) {
		return false
	}
	if ls.statsLine == 0 {
		ls.statsLine = l.num
	}
	return true
}

// statsOption reads one of realm, admin, show-node, show-desc,
// show-legends into st, for a stats listen section or the stats page of
// an HTTP frontend or backend; false if kw is none of them.
func (p *parser) statsOption(l line, kw string, st *lbconfig.Stats) bool {
	switch kw {
	case "stats realm":
		if !p.once(l, kw) {
			return true
		}
		// haproxy takes the rest of the line, its escaped spaces
		// already joined by the lexer.
		if args, ok := p.nargs(l, 2, 1, 1, "a realm, with \\ before its spaces"); ok {
			st.Realm = args[0]
		}
	case "stats admin":
		if !p.once(l, kw) {
			return true
		}
		args := l.words[2:]
		if len(args) == 0 || (args[0] != "if" && args[0] != "unless") {
			p.errorf(l, "stats", "'stats admin' requires either 'if' or 'unless' followed by a condition (accepted: %s)", statsAdminConds)
			return true
		}
		switch strings.Join(args, " ") {
		case "if TRUE", "unless FALSE":
			st.Admin = lbconfig.AdminAll
		case "if LOCALHOST":
			st.Admin = lbconfig.AdminLocal
		case "if FALSE", "unless TRUE":
			st.Admin = lbconfig.AdminNone
		default:
			p.errorf(l, "stats", "stats admin %q: vipstack takes no other condition (accepted: %s)", strings.Join(args, " "), statsAdminConds)
		}
	case "stats show-node":
		if !p.once(l, kw) {
			return true
		}
		if args, ok := p.nargs(l, 2, 0, 1, "an optional node name"); ok {
			st.ShowNode = true
			if len(args) == 1 {
				st.Node = args[0]
			}
		}
	case "stats show-desc":
		if !p.once(l, kw) {
			return true
		}
		// The description is the rest of the line, words joined by a
		// space as haproxy joins them.
		// Without one, global's description (endFile).
		if len(l.words) < 3 {
			p.state["show-desc "+p.key] = strconv.Itoa(l.num)
			return true
		}
		st.Desc = strings.Join(l.words[2:], " ")
	case "stats show-legends":
		if p.once(l, kw) {
			if _, ok := p.nargs(l, 2, 0, 0, ""); ok {
				st.Legends = true
			}
		}
	default:
		return false
	}
	return true
}

func (p *parser) listenLog(ls *listen) *lbconfig.ConnLog {
	format := ls.logFormat
	switch {
	case format == "" && p.hs.httplog:
		format = p.httplogFormat()
	case format == "":
		format = p.logFormat
		if p.httplogAt != 0 {
			format = p.httplogFormat()
		}
	}
	if format == "" {
		return nil
	}
	// Its lines go out at info (err with log-separate-errors): targets
	// that take notice and above only (OpenShift's `log ... local0
	// notice alert`) get none, as from haproxy.
	level := lbconfig.LevelInfo
	if p.more.own.separateErrors {
		level = lbconfig.LevelErr
	}
	if !slices.ContainsFunc(ls.logs, func(t lbconfig.LogTarget) bool { return t.Level >= level }) {
		return nil
	}
	return &lbconfig.ConnLog{Format: format, DontLogNull: p.dontLogNull,
		DontLogNormal: p.more.own.dontLogNormal, SeparateErrors: p.more.own.separateErrors}
}

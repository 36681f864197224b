package haproxycfg

import (
	"os"
	"strconv"
	"strings"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// Stick tables and peers: `peers` sections (only the local peer: haproxy
// 2.6 hands the tables to the next process through it at a reload),
// global's `localpeer`, a backend's `stick-table`, `stick on|match|
// store-request src` and `fullconn`, read as haproxy 2.6 reads them.

const peersKeywords = "peer NAME ADDRESS:PORT, server NAME [ADDRESS:PORT]"

// peersSection is a peers section being read.
type peersSection struct {
	name    string
	line    int
	peers   []nameLine // every peer, in order
	addrs   []string
	removed map[string]bool // sections haproxy removes: no local peer
}

// openPeers starts `peers NAME`.
func (p *parser) openPeers(l line) {
	args, ok := p.nargs(l, 1, 1, 1, "its name")
	if !ok {
		return
	}
	if p.cfg.PeersByName(args[0]) != nil || p.peers.name == args[0] {
		p.errorf(l, "peers", "peers %s is defined twice (accepted: unique names)", args[0])
		return
	}
	p.key = "peers " + args[0]
	p.source(p.key, l)
	p.kind = secPeers
	p.peers.name, p.peers.line, p.peers.peers, p.peers.addrs = args[0], l.num, nil, nil
}

func (p *parser) peersLine(l line) {
	kw := l.kw()
	switch kw {
	case "peer", "server":
		lo := 2
		if kw == "server" {
			lo = 1 // the local peer may be written without its address
		}
		args, ok := p.nargs(l, 1, lo, 2, "NAME ADDRESS:PORT")
		if !ok {
			return
		}
		addr := ""
		if len(args) > 1 {
			addr = args[1]
		}
		p.peers.peers = append(p.peers.peers, nameLine{args[0], l.num})
		p.peers.addrs = append(p.peers.addrs, addr)
	default:
		p.errorf(l, kw, "keyword %q in peers %s is not supported by vipstack (supported: %s)", kw, p.peers.name, peersKeywords)
	}
}

// localPeer is the local peer's name: global's localpeer, else the
// host's name, as haproxy takes it.
func (p *parser) localPeer() string {
	if p.cfg.LocalPeer != "" {
		return p.cfg.LocalPeer
	}
	h, _ := os.Hostname()
	return h
}

// endPeers keeps the section when its only peer is the local one. One
// without the local peer is removed with haproxy's warning (its tables
// then sync with nothing, as in haproxy); one with remote peers is an
// error, as vipstack does not speak haproxy's peers protocol.
func (p *parser) endPeers() {
	ps := &p.peers
	local := p.localPeer()
	isLocal := -1
	for i, pr := range ps.peers {
		if pr.name == local {
			isLocal = i
		}
	}
	if isLocal < 0 {
		p.warnf(line{num: ps.line}, "Removing incomplete section 'peers %s' (no peer named '%s').", ps.name, local)
		if ps.removed == nil {
			ps.removed = map[string]bool{}
		}
		ps.removed[ps.name] = true
		return
	}
	for i, pr := range ps.peers {
		if i != isLocal {
			p.errorf(line{num: pr.line}, "peer", "peers %s: peer %s (%s) is remote: syncing stick tables with remote peers needs haproxy's peers protocol, which vipstack does not speak "+
				"(accepted: a peers section whose only peer is the local one, %q, which keeps stick tables over reloads)", ps.name, pr.name, ps.addrs[i], local)
			return
		}
	}
	p.cfg.Peers = append(p.cfg.Peers, lbconfig.Peers{Name: ps.name, Local: local})
}

// endStickPeers drops, from stick tables, the peers sections haproxy
// removed, as haproxy does without a word.
func (p *parser) endStickPeers() {
	for i := range p.cfg.Backends {
		if t := p.cfg.Backends[i].StickTable; t != nil && p.peers.removed[t.Peers] {
			t.Peers = ""
		}
	}
}

// stickTable reads `stick-table type T [len N] size N [expire T]
// [nopurge] [peers NAME] [store D,...]`.
func (p *parser) stickTable(l line) {
	const form = "stick-table type ip|ipv6|integer|string [len N]|binary [len N] size N[k|m|g] [expire TIME] [nopurge] [peers NAME] [store DATA,...]"
	if !p.once(l, "stick-table") {
		return
	}
	fail := func(format string, a ...any) {
		p.errorf(l, "stick-table", "stick-table: "+format+" (accepted: "+form+")", a...)
	}
	t := &lbconfig.StickTable{}
	w := l.words[1:]
	value := func(i int) (string, bool) {
		if i+1 >= len(w) {
			fail("%s needs a value", w[i])
			return "", false
		}
		return w[i+1], true
	}
	for i := 0; i < len(w); i++ {
		switch w[i] {
		case "type":
			v, ok := value(i)
			if !ok {
				return
			}
			switch v {
			case "ip", "ipv6", "integer":
			case "string", "binary":
				t.Len = 32
			default:
				fail("type %q is not a key type (accepted: ip, ipv6, integer, string, binary)", v)
				return
			}
			t.Type = v
			i++
			if (v == "string" || v == "binary") && i+1 < len(w) && w[i+1] == "len" {
				n, ok := value(i + 1)
				if !ok {
					return
				}
				k, err := strconv.Atoi(n)
				if err != nil || k < 1 {
					fail("len %q is not a positive number of bytes", n)
					return
				}
				t.Len = k
				i += 2
			}
		case "size":
			v, ok := value(i)
			if !ok {
				return
			}
			n, ok := parseSize(v)
			if !ok {
				fail("size %q is not a number of entries such as 100k", v)
				return
			}
			t.Size = n
			i++
		case "expire":
			v, ok := value(i)
			if !ok {
				return
			}
			d, ok := p.timeArg(l, "stick-table", v, msUnit)
			if !ok {
				return
			}
			t.Expire = d
			i++
		case "nopurge":
			t.NoPurge = true
		case "peers":
			v, ok := value(i)
			if !ok {
				return
			}
			t.Peers = v
			i++
		case "store":
			v, ok := value(i)
			if !ok {
				return
			}
			for _, d := range strings.Split(v, ",") {
				if !knownStickData(d) {
					fail("store %q is not a data type haproxy 2.6 keeps", d)
					return
				}
				t.Store = append(t.Store, d)
			}
			i++
		default:
			fail("%q is not supported by vipstack", w[i])
			return
		}
	}
	switch {
	case t.Type == "":
		fail("a type is needed")
		return
	case t.Size == 0:
		fail("a size is needed")
		return
	}
	p.source(lbconfig.ItemKey(p.key, "stick-table"), l)
	p.source(lbconfig.ItemKey(lbconfig.BackendKey(p.be.Name), "stick-table"), l)
	p.be.StickTable = t
}

// parseSize reads a table size: a number with an optional k, m or g
// (powers of 1024, as haproxy reads them).
func parseSize(v string) (int, bool) {
	mul := 1
	switch {
	case strings.HasSuffix(v, "k"), strings.HasSuffix(v, "K"):
		mul = 1 << 10
	case strings.HasSuffix(v, "m"), strings.HasSuffix(v, "M"):
		mul = 1 << 20
	case strings.HasSuffix(v, "g"), strings.HasSuffix(v, "G"):
		mul = 1 << 30
	}
	if mul > 1 {
		v = v[:len(v)-1]
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > (1<<31)/mul {
		return 0, false
	}
	return n * mul, true
}

// knownStickData reports whether d is one of haproxy 2.6's stick table
// data types, a rate with its period: gpc0_rate(10s).
func knownStickData(d string) bool {
	name, period, rate := strings.Cut(d, "(")
	if rate && !strings.HasSuffix(period, ")") {
		return false
	}
	counters := " server_id gpt0 gpc0 gpc1 conn_cnt conn_cur sess_cnt http_req_cnt http_err_cnt http_fail_cnt bytes_in_cnt bytes_out_cnt "
	rates := " gpc0_rate gpc1_rate conn_rate sess_rate http_req_rate http_err_rate http_fail_rate bytes_in_rate bytes_out_rate "
	if rate {
		return strings.Contains(rates, " "+name+" ")
	}
	return strings.Contains(counters, " "+name+" ")
}

// stickRule reads `stick on|match|store-request PATTERN [table NAME]`.
func (p *parser) stickRule(l line) {
	const form = "stick on|match|store-request src [table NAME]"
	if len(l.words) < 3 {
		p.errorf(l, "stick", "stick needs a rule and a pattern (accepted: %s)", form)
		return
	}
	r := lbconfig.StickRule{Pattern: l.words[2]}
	switch l.words[1] {
	case "on":
		r.Match, r.Store = true, true
	case "match":
		r.Match = true
	case "store-request":
		r.Store = true
	default:
		p.errorf(l, "stick", "stick %s is not supported by vipstack (accepted: %s)", l.words[1], form)
		return
	}
	if r.Pattern != "src" {
		p.errorf(l, "stick", "stick %s %s: the pattern %q is not supported by vipstack (accepted: %s)", l.words[1], r.Pattern, r.Pattern, form)
		return
	}
	rest := l.words[3:]
	if len(rest) >= 2 && rest[0] == "table" {
		r.Table, rest = rest[1], rest[2:]
	}
	if len(rest) > 0 {
		p.errorf(l, "stick", "stick %s src: %q is not supported by vipstack: stick rules take no condition here (accepted: %s)", l.words[1], strings.Join(rest, " "), form)
		return
	}
	key := lbconfig.ItemKey(lbconfig.BackendKey(p.be.Name), "stick "+strconv.Itoa(len(p.be.StickRules)))
	p.source(key, l)
	p.be.StickRules = append(p.be.StickRules, r)
}

// fullConn reads `fullconn N`.
func (p *parser) fullConn(l line, dst *int) {
	if !p.once(l, "fullconn") {
		return
	}
	if args, ok := p.nargs(l, 1, 1, 1, "a number of sessions"); ok {
		if n, ok := p.intArg(l, "fullconn", args[0], 1, "1 or more"); ok {
			*dst = n
		}
	}
}

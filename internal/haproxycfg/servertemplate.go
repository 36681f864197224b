package haproxycfg

import (
	"slices"
	"strconv"
	"strings"
)

// maxTemplateServers caps the servers one server-template line makes.
const maxTemplateServers = 1024

// serverTemplate reads `server-template PREFIX NUM|LOW-HIGH ADDRESS[:PORT]
// [params]`: servers PREFIX1..PREFIXNUM (PREFIXLOW..PREFIXHIGH), each as
// a server line with that address and those parameters, as haproxy makes
// them. With resolvers haproxy spreads a DNS answer's addresses over the
// servers, which vipstack does not do yet: refused.
func (p *parser) serverTemplate(l line) {
	const form = "server-template PREFIX NUM|LOW-HIGH ADDRESS[:PORT] [params]"
	if len(l.words) < 4 {
		p.errorf(l, "server-template", "server-template needs a prefix, a number or range and an address (accepted: %s)", form)
		return
	}
	prefix, num := l.words[1], l.words[2]
	lo, hi := 1, 0
	var err1, err2 error
	if a, b, ok := strings.Cut(num, "-"); ok {
		lo, err1 = strconv.Atoi(a)
		hi, err2 = strconv.Atoi(b)
	} else {
		hi, err1 = strconv.Atoi(num)
	}
	switch {
	case err1 != nil || err2 != nil || lo < 1 || hi < lo:
		p.errorf(l, "server-template", "server-template %s: %q is not a number of servers or a range LOW-HIGH of 1 or more (accepted: %s)", prefix, num, form)
		return
	case hi-lo+1 > maxTemplateServers:
		p.errorf(l, "server-template", "server-template %s: %d servers is more than vipstack makes from one line (accepted: at most %d)", prefix, hi-lo+1, maxTemplateServers)
		return
	}
	if slices.Contains(l.words[4:], "resolvers") {
		p.errorf(l, "server-template", "server-template %s with resolvers is not supported by vipstack yet: haproxy spreads the DNS answer's addresses over the servers (accepted: server-template without resolvers, every server at the address resolved at start; or server lines with resolvers)", prefix)
		return
	}
	for i := lo; i <= hi; i++ {
		words := append([]string{"server", prefix + strconv.Itoa(i), l.words[3]}, l.words[4:]...)
		p.server(line{num: l.num, words: words})
	}
}

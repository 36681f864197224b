package haproxycfg

import "strings"

// removedKeywords are directives that haproxy 2.6 itself refuses, having
// dropped them, with its message (measured with haproxy -c): vipstack
// refuses them with haproxy's reason and replacement rather than as a
// keyword it lacks.
var removedKeywords = map[string]string{
	"nbproc":             "nbproc is not supported any more since HAProxy 2.5. Threads will automatically be used on multi-processor machines if available.",
	"contimeout":         "the 'contimeout' directive is not supported anymore since HAProxy 2.1. Use 'timeout connect'.",
	"clitimeout":         "the 'clitimeout' directive is not supported anymore since HAProxy 2.1. Use 'timeout client'.",
	"srvtimeout":         "the 'srvtimeout' directive is not supported anymore since HAProxy 2.1. Use 'timeout server'.",
	"redispatch":         "keyword 'redispatch' directive is not supported anymore since HAProxy 2.1. Use 'option redispatch'.",
	"block":              "The 'block' directive is not supported anymore since HAProxy 2.1. Use 'http-request deny' which uses the exact same syntax.",
	"monitor-net":        "'monitor-net' doesn't exist anymore. Please use 'http-request return status 200 if { src <net> }' instead.",
	"reqadd":             "The 'reqadd' directive is not supported anymore since HAProxy 2.1. Use 'http-request add-header' instead.",
	"reqrep":             "The 'reqrep' directive is not supported anymore since HAProxy 2.1. Use 'http-request replace-path', 'http-request replace-uri' or 'http-request replace-header' instead.",
	"reqirep":            "The 'reqirep' directive is not supported anymore since HAProxy 2.1. Use 'http-request replace-header' instead.",
	"reqdel":             "The 'reqdel' directive is not supported anymore since HAProxy 2.1. Use 'http-request del-header' instead.",
	"reqidel":            "The 'reqidel' directive is not supported anymore since HAProxy 2.1. Use 'http-request del-header' instead.",
	"reqallow":           "The 'reqallow' directive is not supported anymore since HAProxy 2.1. Use 'http-request allow' instead.",
	"reqiallow":          "The 'reqiallow' directive is not supported anymore since HAProxy 2.1. Use 'http-request allow' instead.",
	"reqdeny":            "The 'reqdeny' not supported anymore since HAProxy 2.1. Use 'http-request deny' instead.",
	"reqideny":           "The 'reqideny' directive is not supported anymore since HAProxy 2.1. Use 'http-request deny' instead.",
	"reqpass":            "The 'reqpass' not supported anymore since HAProxy 2.1.",
	"reqipass":           "The 'reqipass' directive is not supported anymore since HAProxy 2.1.",
	"reqtarpit":          "The 'reqtarpit' directive is not supported anymore since HAProxy 2.1. Use 'http-request tarpit' instead.",
	"reqitarpit":         "The 'reqitarpit' directive is not supported anymore since HAProxy 2.1. Use 'http-request tarpit' instead.",
	"rspadd":             "The 'rspadd' directive is not supported anymore since HAProxy 2.1. Use 'http-response add-header' instead.",
	"rsprep":             "The 'rsprep' directive is not supported anymore since HAProxy 2.1. Use 'http-response replace-header' instead.",
	"rspirep":            "The 'rspirep' directive is not supported anymore since HAProxy 2.1. Use 'http-response replace-header' instead.",
	"rspdel":             "The 'rspdel' directive is not supported anymore since HAProxy 2.1. Use 'http-response del-header' .",
	"rspidel":            "The 'rspidel' directive is not supported anymore since HAProxy 2.1. Use 'http-response del-header' instead.",
	"rspdeny":            "The 'rspdeny' directive is not supported anymore since HAProxy 2.1. Use 'http-response deny' instead.",
	"rspideny":           "The 'rspideny' directive is not supported anymore since HAProxy 2.1. Use 'http-response deny' instead.",
	"option forceclose":  "option 'forceclose' is not supported any more since HAProxy 2.0, please just remove it, or use 'option httpclose' if absolutely needed.",
	"option http-tunnel": "option 'http-tunnel' is not supported any more since HAProxy 2.1, please just remove it, it shouldn't be needed.",
}

// removed reports a keyword haproxy 2.6 no longer knows, in its words;
// false for another.
func (p *parser) removed(l line, kw string) bool {
	msg, ok := removedKeywords[kw]
	if ok && kw == "monitor-net" && len(l.words) > 1 {
		msg = strings.ReplaceAll(msg, "<net>", l.words[1])
	}
	if ok {
		p.errorf(l, l.kw(), "keyword %q in %s: %s (haproxy 2.6 refuses it too)", kw, p.key, msg)
	}
	return ok
}

package httpproxy

import (
	"net/http"
	"strings"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// The frontend's `capture` lines, as haproxy 2.6 fills them for its log
// lines (%hr %hs %hrl %hsl %CC %CS).

// captureHeaders takes, for the frontend's capture lines of one side
// (request or answer), the last occurrence of each header cut to its
// length; the other side's entries stay nil. Both are nil without
// capture lines of their side.
func captureHeaders(caps []lbconfig.Capture, response bool, h http.Header, host string) (req, res []*string) {
	var out []*string
	n := 0
	for _, c := range caps {
		if c.Response != response {
			continue
		}
		n++
		vs := h.Values(c.Name)
		if !response && strings.EqualFold(c.Name, "host") && host != "" {
			vs = []string{host} // net/http keeps Host out of Header
		}
		var v *string
		if len(vs) > 0 {
			s := vs[len(vs)-1]
			s = s[:min(len(s), c.Len)]
			v = &s
		}
		out = append(out, v)
	}
	other := 0
	for _, c := range caps {
		if c.Response != response {
			other++
		}
	}
	var none []*string
	if other > 0 {
		none = make([]*string, other)
	}
	if n == 0 {
		out = nil
	}
	if response {
		return none, out
	}
	return out, none
}

// captureAnswer fills the answer's captures of e.
func captureAnswer(fe *lbconfig.HTTPFrontend, resp *http.Response, e *Entry) {
	if len(e.ResCaps) > 0 {
		_, e.ResCaps = captureHeaders(fe.Captures, true, resp.Header, "")
	}
	if fe.CaptureCookie != nil {
		e.CookieRes = captureCookie(fe.CaptureCookie, resp.Header.Values("Set-Cookie"), true)
	}
}

// captureCookie is the first cookie of the Cookie (setCookie false) or
// Set-Cookie headers whose name begins with the capture's name, as
// "name=value" cut to its length; "" when there is none.
func captureCookie(c *lbconfig.Capture, lines []string, setCookie bool) string {
	for _, line := range lines {
		parts := strings.Split(line, ";")
		if setCookie {
			parts = parts[:1] // the attributes after the first ';' are not cookies
		}
		for _, part := range parts {
			part = strings.Trim(part, " \t")
			if len(part) >= len(c.Name) && strings.HasPrefix(part, c.Name) && strings.Contains(part, "=") {
				return part[:min(len(part), c.Len)]
			}
		}
	}
	return ""
}

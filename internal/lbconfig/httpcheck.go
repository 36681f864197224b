package lbconfig

import "strings"

// HTTPCheckHeader is one header of an HTTP check's request.
type HTTPCheckHeader struct{ Name, Value string }

// httpCheckSend validates what `http-check send` adds to a check: header
// names that are HTTP tokens, values and a body without line breaks in
// the headers, and a connect port in range.
func (v *validator) httpCheckSend(key, pos string, h *HTTPCheck) {
	const kw = "http-check send"
	if h.Method == "" {
		if len(h.Headers) > 0 || h.Body != "" || h.Connect || h.ConnectPort != 0 {
			v.fail(pos, key, kw, "HTTP check headers, body or connect port without a method "+
				"(accepted: them with an HTTP check, option httpchk)")
		}
		return
	}
	for _, hd := range h.Headers {
		if !isToken(hd.Name) {
			v.fail(pos, key, kw, "HTTP check header name %q is not an HTTP token (accepted: e.g. Host, X-Check)", hd.Name)
		}
		if strings.ContainsAny(hd.Value, "\r\n\x00") {
			v.fail(pos, key, kw, "HTTP check header %s: value %q has a line break or NUL (accepted: one line of text)", hd.Name, hd.Value)
		}
	}
	if h.ConnectPort != 0 && !h.Connect {
		v.fail(pos, key, kw, "http-check connect port %d without the connect rule (accepted: Connect set with ConnectPort)", h.ConnectPort)
	}
	if h.ConnectPort < 0 || h.ConnectPort > 65535 {
		v.fail(pos, key, kw, "http-check connect port %d is out of range (accepted: 1..65535)", h.ConnectPort)
	}
}

// HasHeader reports whether the check's request has a header of this
// name, in any case.
func (h HTTPCheck) HasHeader(name string) bool {
	for _, hd := range h.Headers {
		if strings.EqualFold(hd.Name, name) {
			return true
		}
	}
	return false
}

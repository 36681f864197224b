package httpproxy

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// The replace- rules (http-request replace-header, replace-value,
// replace-path, replace-uri; http-response replace-header,
// replace-value) and the http-response rules, as haproxy 2.6 carries
// them out.

// replaceWhole is haproxy's replacement: when re matches s anywhere, the
// whole of s becomes with, where \N is the match's group N (empty when
// the group matched nothing) and \xHH a byte; another escaped character
// stands for itself. ok is false when re does not match.
func replaceWhole(re *regexp.Regexp, s, with string) (string, bool) {
	m := re.FindStringSubmatchIndex(s)
	if m == nil {
		return s, false
	}
	return lbconfig.ExpReplace(s, m, with), true
}

// replaceHeader carries out replace-header (values false: each whole
// line of the header) or replace-value (values true: each of a line's
// comma-separated values, its separators kept) on h.
func replaceHeader(h http.Header, name string, re *regexp.Regexp, with string, values bool) {
	vs := h.Values(name)
	if len(vs) == 0 {
		return
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = replaceLine(v, re, with, values)
	}
	h[http.CanonicalHeaderKey(name)] = out
}

func replaceLine(v string, re *regexp.Regexp, with string, values bool) string {
	if !values {
		s, _ := replaceWhole(re, v, with)
		return s
	}
	parts := strings.Split(v, ",")
	for j, part := range parts {
		core := strings.TrimSpace(part)
		lead := part[:strings.Index(part, core)]
		if core == "" {
			lead = part
		}
		tail := part[len(lead)+len(core):]
		s, _ := replaceWhole(re, core, with)
		parts[j] = lead + s + tail
	}
	return strings.Join(parts, ",")
}

// replaceRequest carries out an http-request replace- rule on rq.
func replaceRequest(r *lbconfig.HTTPRule, rq *request) {
	with := expand(r.Value, rq)
	u := rq.r.URL
	switch r.Action {
	case "replace-header", "replace-value":
		if strings.EqualFold(r.Name, "host") {
			rq.r.Host = replaceLine(rq.r.Host, r.Re, with, r.Action == "replace-value")
			return
		}
		replaceHeader(rq.r.Header, r.Name, r.Re, with, r.Action == "replace-value")
	case "replace-path":
		if p, ok := replaceWhole(r.Re, u.EscapedPath(), with); ok {
			setRawPath(u, p)
		}
	case "replace-uri":
		uri := u.RequestURI()
		if u.IsAbs() {
			uri = u.Scheme + "://" + u.Host + uri
		}
		s, ok := replaceWhole(r.Re, uri, with)
		if !ok {
			return
		}
		nu, err := url.ParseRequestURI(s)
		if err != nil {
			return // haproxy refuses an invalid URI: the request stays
		}
		if nu.Host != "" {
			u.Scheme, u.Host = nu.Scheme, nu.Host
			rq.r.Host = nu.Host
		}
		setRawPath(u, nu.EscapedPath())
		u.RawQuery, u.ForceQuery = nu.RawQuery, nu.ForceQuery
	}
}

// setRawPath sets u's path as it goes on the wire.
func setRawPath(u *url.URL, raw string) {
	if p, err := url.PathUnescape(raw); err == nil {
		u.Path, u.RawPath = p, raw
		return
	}
	u.Path, u.RawPath = raw, ""
}

// applyResponse runs a section's http-response rules on a server's
// answer (haproxy: the backend's, then the frontend's).
func applyResponse(h *lbconfig.HTTPProxy, a acls, rq *request, resp *http.Response) {
	for i := range h.ResponseRules {
		r := &h.ResponseRules[i]
		if !a.cond(r.Cond, rq) {
			continue
		}
		switch r.Action {
		case "set-header":
			resp.Header.Del(r.Name)
			resp.Header[http.CanonicalHeaderKey(r.Name)] = []string{expand(r.Value, rq)}
		case "add-header":
			resp.Header.Add(r.Name, expand(r.Value, rq))
		case "del-header":
			resp.Header.Del(r.Name)
		case "replace-header", "replace-value":
			replaceHeader(resp.Header, r.Name, r.Re, expand(r.Value, rq), r.Action == "replace-value")
		case "set-status":
			resp.StatusCode = r.Status
			resp.Status = strconv.Itoa(r.Status) + " " + http.StatusText(r.Status)
		}
	}
}

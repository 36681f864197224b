package httpproxy

import (
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/vipstack/vipstack/internal/lb/tcprules"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// request is what ACLs and rules see of a request.
type request struct {
	r        *http.Request
	src, dst netip.AddrPort
	tls      bool
	// unix is the listener id when the client came over a UNIX socket
	// (src and dst unset), 0 otherwise.
	unix int
	// vars are the request's variables (txn.NAME, req.NAME), set by
	// http-request set-var in the frontend's and the backend's rules.
	vars map[string]string
	// samples are the configuration's compiled sample expressions with
	// converters, by their text.
	samples map[string]*lbconfig.SampleExpr
}

// acls are a section's named ACLs.
type acls map[string][]lbconfig.ACLTest

// cond evaluates an if/unless condition; nil is true.
func (a acls) cond(c *lbconfig.Cond, rq *request) bool {
	return c.Holds(func(t lbconfig.CondTerm) bool { return a.term(t, rq) })
}

func (a acls) term(t lbconfig.CondTerm, rq *request) bool {
	if t.Anon != nil {
		return test(t.Anon, rq)
	}
	tests, ok := a[t.Name]
	if !ok {
		if pre, ok := lbconfig.PredefinedACLs[t.Name]; ok {
			return test(&pre, rq)
		}
		return false
	}
	for i := range tests {
		if test(&tests[i], rq) {
			return true
		}
	}
	return false
}

// fetch returns the sample values of t's fetch: none when the sample
// does not exist (a missing header).
func fetch(t *lbconfig.ACLTest, rq *request) []string {
	r := rq.r
	switch t.Fetch {
	case "path":
		return []string{r.URL.Path}
	case "url":
		return []string{r.RequestURI}
	case "base":
		h := r.Host
		return []string{h + r.URL.Path}
	case "hdr":
		vs := r.Header.Values(t.Arg)
		if strings.EqualFold(t.Arg, "host") && r.Host != "" {
			vs = []string{r.Host}
		}
		// haproxy's hdr() splits a header's value at commas.
		var out []string
		for _, v := range vs {
			for _, part := range strings.Split(v, ",") {
				out = append(out, strings.TrimSpace(part))
			}
		}
		return out
	case "req.ver":
		return []string{strings.TrimPrefix(r.Proto, "HTTP/")}
	case "ssl_fc_sni":
		if r.TLS == nil || r.TLS.ServerName == "" {
			return nil
		}
		return []string{r.TLS.ServerName}
	case "var":
		if v, ok := rq.vars[t.Arg]; ok {
			return []string{v}
		}
	}
	return nil
}

// test evaluates one ACL.
func test(t *lbconfig.ACLTest, rq *request) bool {
	switch t.Fetch {
	case "always_true":
		return true
	case "always_false":
		return false
	case "ssl_fc":
		return rq.tls
	case "method":
		return slices.Contains(t.Methods, rq.r.Method)
	case "src", "dst", "src_port", "dst_port":
		m, _ := tcprules.Match(t, rq.src, rq.dst)
		return m
	}
	samples := fetch(t, rq)
	if t.Conv != nil {
		conv := make([]string, len(samples))
		for i, s := range samples {
			conv[i] = t.Conv.Convert(s)
		}
		samples = conv
	}
	if t.Match == "found" {
		return len(samples) > 0
	}
	for _, s := range samples {
		for i, v := range t.Values {
			if match(t, i, s, v) {
				return true
			}
		}
	}
	return false
}

func match(t *lbconfig.ACLTest, i int, s, v string) bool {
	if t.Match == "reg" {
		return i < len(t.Regexps) && t.Regexps[i].MatchString(s)
	}
	if t.Insensitive {
		s, v = strings.ToLower(s), strings.ToLower(v)
	}
	switch t.Match {
	case "str":
		return s == v
	case "beg":
		return strings.HasPrefix(s, v)
	case "end":
		return strings.HasSuffix(s, v)
	case "sub":
		return strings.Contains(s, v)
	case "dir":
		return slices.Contains(strings.Split(s, "/"), v)
	case "dom":
		// v delimited by dots or slashes in s.
		for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == '/' || r == ':' }) {
			if part == v {
				return true
			}
		}
		return strings.Contains("."+s+".", "."+v+".")
	}
	return false
}

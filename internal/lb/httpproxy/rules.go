package httpproxy

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// expand fills a rule value's %[...] expressions (lbconfig.HTTPValueVars
// with lbconfig.Converters).
func expand(v string, rq *request) string {
	if !strings.Contains(v, "%[") {
		return v
	}
	var b strings.Builder
	for {
		lit, expr, rest, found, err := lbconfig.NextSample(v)
		if err != nil || !found {
			b.WriteString(v) // an unclosed %[ (validation refuses it)
			return b.String()
		}
		b.WriteString(lit)
		s, _ := sampleOK(expr, rq)
		b.WriteString(s)
		v = rest
	}
}

// sampleOK is the value of a sample expression (a fetch of
// lbconfig.VarFetches and its converters), and whether the sample
// exists: a missing header or variable has none.
func sampleOK(expr string, rq *request) (string, bool) {
	if !strings.Contains(expr, ",") {
		return fetchOK(expr, rq)
	}
	e := rq.samples[expr]
	if e == nil {
		// Not compiled with the configuration (a request built by
		// a test): compiled now.
		var err error
		if e, err = lbconfig.ParseSampleExpr(expr); err != nil {
			return "", false
		}
	}
	v, ok := fetchOK(e.Fetch, rq)
	if !ok {
		return "", false
	}
	return e.Convert(v), true
}

// fetchOK is the value of a sample fetch, and whether the sample exists.
func fetchOK(expr string, rq *request) (string, bool) {
	if t, ok := strings.CutPrefix(expr, "str("); ok {
		return strings.TrimSuffix(t, ")"), true
	}
	if name, ok := strings.CutPrefix(expr, "var("); ok {
		v, ok := rq.vars[strings.TrimSuffix(name, ")")]
		return v, ok
	}
	switch expr {
	case "base":
		return rq.r.Host + rq.r.URL.Path, true
	case "url":
		return rq.r.RequestURI, true
	}
	for _, f := range []string{"req.hdr(", "hdr("} {
		if name, ok := strings.CutPrefix(expr, f); ok {
			name = strings.TrimSuffix(name, ")")
			if strings.EqualFold(name, "host") {
				return rq.r.Host, rq.r.Host != ""
			}
			vs := rq.r.Header.Values(name)
			if len(vs) == 0 {
				return "", false
			}
			// haproxy's req.hdr() gives the last occurrence.
			parts := strings.Split(vs[len(vs)-1], ",")
			return strings.TrimSpace(parts[len(parts)-1]), true
		}
	}
	if expr == "ssl_fc_sni" && (rq.r.TLS == nil || rq.r.TLS.ServerName == "") {
		return "", false
	}
	return fixedSample(expr, rq), true
}

// compileSamples compiles the sample expressions with converters of
// the frontend's and the backends' rules, by their text.
func compileSamples(cfg Config) map[string]*lbconfig.SampleExpr {
	out := map[string]*lbconfig.SampleExpr{}
	add := func(expr string) {
		if !strings.Contains(expr, ",") {
			return
		}
		if e, err := lbconfig.ParseSampleExpr(expr); err == nil {
			out[expr] = e
		}
	}
	rules := func(h *lbconfig.HTTPProxy) {
		for _, rs := range [][]lbconfig.HTTPRule{h.Rules, h.Redirects, h.ResponseRules} {
			for _, r := range rs {
				if r.Action == "set-var" {
					add(r.Value)
					continue
				}
				for _, v := range []string{r.Value, r.To} {
					for {
						_, expr, rest, found, err := lbconfig.NextSample(v)
						if err != nil || !found {
							break
						}
						add(expr)
						v = rest
					}
				}
			}
		}
	}
	if cfg.Frontend.HTTP != nil {
		rules(&cfg.Frontend.HTTP.HTTPProxy)
	}
	for _, b := range cfg.Backends {
		if b.HTTP != nil {
			rules(&b.HTTP.HTTPProxy)
		}
	}
	return out
}

func fixedSample(expr string, rq *request) string {
	switch expr {
	case "src":
		return rq.src.Addr().Unmap().String()
	case "src_port":
		return strconv.Itoa(int(rq.src.Port()))
	case "dst":
		return rq.dst.Addr().Unmap().String()
	case "dst_port":
		return strconv.Itoa(int(rq.dst.Port()))
	case "ssl_fc":
		if rq.tls {
			return "1"
		}
		return "0"
	case "ssl_fc_sni":
		if rq.r.TLS == nil {
			return ""
		}
		return rq.r.TLS.ServerName
	case "path":
		return rq.r.URL.Path
	case "method":
		return rq.r.Method
	}
	return ""
}

// verdict is what the rules decided for a request.
type verdict struct {
	status   int    // deny: the status; redirect: the code; 0 goes on
	location string // redirect's Location
	service  string // use-service's service (status 0)
	answer   *answer
}

// answer is http-request return's answer to a request, its formats
// expanded.
type answer struct {
	contentType, body string
	headers           [][2]string
}

// done reports whether the rules ended the request's way through the
// section: a deny, a redirect or a service answers it.
func (v verdict) done() bool { return v.status != 0 || v.service != "" }

// term is the termination state a verdict logs: LR for a redirect or a
// return (haproxy's "locally processed"), PR for a deny.
func (v verdict) term() string {
	if v.location != "" || v.answer != nil {
		return "LR"
	}
	return "PR"
}

// apply runs a section's http-request rules, then its redirect rules, on
// rq, as haproxy does: the first deny, redirect or use-service ends
// them; allow ends the http-request rules.
func apply(h *lbconfig.HTTPProxy, a acls, rq *request) verdict {
	for i := range h.Rules {
		r := &h.Rules[i]
		if !a.cond(r.Cond, rq) {
			continue
		}
		switch r.Action {
		case "allow":
			goto redirects
		case "deny":
			return verdict{status: r.Status}
		case "redirect":
			return verdict{status: r.Status, location: redirectTo(r, rq)}
		case "use-service":
			return verdict{service: r.Name}
		case "return":
			return verdict{status: r.Status, answer: returnAnswer(r.Return, rq)}
		case "set-header":
			v := expand(r.Value, rq)
			setHeader(rq.r, r.Name, v)
		case "add-header":
			v := expand(r.Value, rq)
			if strings.EqualFold(r.Name, "host") {
				rq.r.Host = v
			} else {
				rq.r.Header.Add(r.Name, v)
			}
		case "set-var":
			if v, ok := sampleOK(r.Value, rq); ok {
				if rq.vars == nil {
					rq.vars = map[string]string{}
				}
				rq.vars[r.Name] = v
			}
		case "del-header":
			if strings.EqualFold(r.Name, "host") {
				rq.r.Host = ""
			}
			rq.r.Header.Del(r.Name)
		case "set-path":
			p := expand(r.Value, rq)
			rq.r.URL.Path, rq.r.URL.RawPath = p, ""
		case "replace-header", "replace-value", "replace-path", "replace-uri":
			replaceRequest(r, rq)
		}
	}
redirects:
	for i := range h.Redirects {
		r := &h.Redirects[i]
		if a.cond(r.Cond, rq) {
			return verdict{status: r.Status, location: redirectTo(r, rq)}
		}
	}
	return verdict{}
}

// setHeader replaces every occurrence of a header. net/http keeps Host
// out of Header: it is the request's Host.
func setHeader(r *http.Request, name, v string) {
	if strings.EqualFold(name, "host") {
		r.Host = v
		return
	}
	r.Header.Del(name)
	r.Header[http.CanonicalHeaderKey(name)] = []string{v}
}

// redirectTo builds a redirect's Location as haproxy does.
func redirectTo(r *lbconfig.HTTPRule, rq *request) string {
	to := expand(r.To, rq)
	uri := rq.r.URL.RequestURI()
	if rq.r.URL.IsAbs() {
		// an absolute-form request: its path and query
		uri = rq.r.URL.EscapedPath()
		if rq.r.URL.RawQuery != "" {
			uri += "?" + rq.r.URL.RawQuery
		}
	}
	path, query, hasQuery := strings.Cut(uri, "?")
	if r.AppendSlash && !strings.HasSuffix(path, "/") {
		path += "/"
	}
	tail := path
	if hasQuery && !r.DropQuery {
		tail += "?" + query
	}
	switch r.Kind {
	case "location":
		return to
	case "prefix":
		if to == "/" {
			// haproxy: a prefix of "/" leaves the URI alone.
			return tail
		}
		return to + tail
	default: // scheme
		host := rq.r.Host
		return to + "://" + host + tail
	}
}

// returnAnswer expands an http-request return's header values and
// lf-string body for rq.
func returnAnswer(ret *lbconfig.HTTPReturn, rq *request) *answer {
	a := &answer{contentType: ret.ContentType, body: ret.Body}
	if ret.Format {
		a.body = expand(ret.Body, rq)
	}
	for _, h := range ret.Headers {
		a.headers = append(a.headers, [2]string{h.Name, expand(h.Value, rq)})
	}
	return a
}

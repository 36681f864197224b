package haproxycfg

import (
	"os"
	"strconv"
	"strings"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// httpReturnAccepted is what http-request return takes.
const httpReturnAccepted = "status CODE (200..599), content-type TYPE, string TEXT | lf-string FORMAT | file PATH, hdr NAME FORMAT..., then if|unless CONDITION"

// httpReturn reads `http-request return [status CODE] [content-type TYPE]
// [string TEXT | lf-string FORMAT | file PATH] [hdr NAME FORMAT]...` into
// r, with haproxy 2.6's errors and warnings (measured with haproxy -c):
// status 200 by default and 200..599; a body needs a content-type; a
// content-type without a body is ignored with its warning, as are
// content-length and content-type headers; 204 and 304 take no body. A file is read when
// the configuration is, as haproxy does. errorfile, errorfiles,
// default-errorfiles and lf-file are errors.
func (p *parser) httpReturn(l line, r *lbconfig.HTTPRule, args []string) bool {
	ret := &lbconfig.HTTPReturn{}
	r.Status = 200
	fail := func(format string, a ...any) bool {
		p.errorf(l, "http-request", "http-request return: "+format+" (accepted: "+httpReturnAccepted+")", a...)
		return false
	}
	body := "" // the keyword that gave the body
	for i := 0; i < len(args); i++ {
		kw := args[i]
		n := map[string]int{"status": 1, "content-type": 1, "string": 1, "lf-string": 1, "file": 1, "hdr": 2}[kw]
		if n == 0 {
			if inList("errorfile errorfiles default-errorfiles lf-file", kw) {
				return fail("%s is not supported by vipstack", kw)
			}
			return fail("unexpected argument %q", kw)
		}
		if i+n >= len(args) {
			return fail("'%s' expects %d value(s)", kw, n)
		}
		v := args[i+1 : i+1+n]
		i += n
		switch kw {
		case "status":
			code, err := strconv.Atoi(v[0])
			if err != nil || code < 200 || code > 599 {
				return fail("Unexpected status code '%s'.", v[0])
			}
			r.Status = code
		case "content-type":
			ret.ContentType = v[0]
		case "hdr":
			if strings.EqualFold(v[0], "content-length") || strings.EqualFold(v[0], "content-type") {
				p.warnf(l, "header '%s' always ignored by the http reply.", v[0])
				continue
			}
			if err := lbconfig.CheckHTTPValue(v[1]); err != nil {
				return fail("hdr %s: %v", v[0], err)
			}
			ret.Headers = append(ret.Headers, lbconfig.HTTPReturnHeader{Name: v[0], Value: v[1]})
		default: // string, lf-string, file
			if body != "" {
				return fail("unexpected '%s' argument, '%s' already defined.", kw, body)
			}
			body = kw
			if !p.returnBody(l, ret, kw, v[0], fail) {
				return false
			}
		}
	}
	switch {
	case ret.Body != "" && ret.ContentType == "":
		return fail("a content type must be defined when non-empty payload is configured.")
	case ret.Body != "" && (r.Status == 204 || r.Status == 304):
		return fail("No body expected for %d responses.", r.Status)
	case body == "" && ret.ContentType != "":
		p.warnf(l, "content-type '%s' ignored by the http reply because neither errorfile nor payload defined.", ret.ContentType)
		ret.ContentType = ""
	}
	r.Return = ret
	return true
}

// returnBody reads the body of http-request return's string, lf-string
// or file.
func (p *parser) returnBody(l line, ret *lbconfig.HTTPReturn, kw, v string, fail func(string, ...any) bool) bool {
	switch kw {
	case "string":
		ret.Body = v
	case "lf-string":
		if err := lbconfig.CheckHTTPValue(v); err != nil {
			return fail("lf-string %q: %v", v, err)
		}
		ret.Body, ret.Format = v, true
	default:
		b, err := os.ReadFile(v)
		if err != nil {
			p.errorf(l, "http-request", "http-request return: file %q: %v", v, err)
			return false
		}
		ret.Body = string(b)
	}
	return true
}

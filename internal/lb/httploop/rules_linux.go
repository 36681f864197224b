package httploop

import (
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/vipstack/vipstack/internal/lb/httpproxy"
	"github.com/vipstack/vipstack/internal/lb/web"
)

// ruled runs the frontend's and backends' request rules (shared with
// the std engine, httpproxy.Rules) on the request: an answer of the
// rules (deny, redirect) is written at once (answered); otherwise the
// head for the server, as the rules left it, is written into out.
func (c *conn) ruled(out []byte) (answered, more bool) {
	tx := c.tx
	cfg := tx.cfg
	h := &tx.head
	u, err := url.ParseRequestURI(h.URI)
	if err != nil {
		c.lp.putBuf(out)
		return true, c.refuse(answer400, "PR")
	}
	r := &http.Request{Method: h.Method, URL: u, RequestURI: h.URI, Proto: tx.version, ProtoMajor: h.Major, ProtoMinor: h.Minor,
		Header: make(http.Header, len(h.Fields))}
	for _, f := range h.Fields {
		if strings.EqualFold(f.Name, "host") {
			if r.Host == "" {
				r.Host = f.Value
			}
			continue
		}
		r.Header.Add(f.Name, f.Value)
	}
	if !c.local.IsValid() {
		c.local = localAddr(c.fd)
	}
	origURI := u.RequestURI()
	d := cfg.rules.Decide(r, c.client, c.local)
	tx.be = cfg.backends[d.Backend] // the log's backend, also for an answer of the rules
	if d.Status != 0 {
		c.lp.putBuf(out)
		if d.Location == "" {
			return true, c.fail(d.Status, d.Term)
		}
		return true, c.redirect(d)
	}
	uri := h.URI
	if r.URL.RequestURI() != origURI {
		uri = r.URL.RequestURI() // set-path, replace-path, replace-uri
	}
	var ff *forwardFor
	if tx.be != nil {
		ff = tx.be.ff
	}
	tx.out = appendRuled(out[:0], h, r, uri, ff, c.client.Addr())
	return false, false
}

// answer400 is haproxy's 400, for a target the rules cannot read.
const answer400 = "HTTP/1.1 400 Bad request\r\nContent-length: 90\r\nCache-Control: no-cache\r\nConnection: close\r\nContent-Type: text/html\r\n\r\n" +
	"<html><body><h1>400 Bad request</h1>\nYour browser sent an invalid request.\n</body></html>\n"

// redirect answers a redirect rule as std does (no body, Location,
// Cache-Control), and keeps the connection when the client does and
// sent no body.
func (c *conn) redirect(d httpproxy.Decision) bool {
	tx := c.tx
	tx.term, tx.status = d.Term, d.Status
	tx.closing = !tx.keep || !tx.reqDone || c.lp.e.draining.Load()
	a := append(tx.coutBuf(c.lp)[:0], "HTTP/1.1 "...)
	a = strconv.AppendInt(a, int64(d.Status), 10)
	a = append(a, ' ')
	a = append(a, http.StatusText(d.Status)...)
	a = append(a, "\r\ncontent-length: 0\r\nlocation: "...)
	a = append(a, d.Location...)
	a = append(a, "\r\ncache-control: no-cache\r\n"...)
	switch {
	case tx.closing:
		a = append(a, "connection: close\r\n"...)
	case tx.head.Major == 1 && tx.head.Minor == 0:
		a = append(a, "connection: keep-alive\r\n"...)
	}
	tx.cout = append(a, "\r\n"...)
	tx.pend = tx.cout
	c.st = stLocal
	return true
}

// localStep writes an answer of the loop's own that may keep the
// connection, then ends the transaction.
func (c *conn) localStep() bool {
	tx := c.tx
	if len(tx.pend) > 0 && !c.flush() {
		return false
	}
	if c.fd < 0 {
		return false
	}
	return c.finish()
}

// appendRuled is appendRequest for a request the rules may have
// changed: the request line with uri, Host, then the headers in the
// order they came (each name's values together, as the rules left
// them), then those the rules added, in name order.
func appendRuled(dst []byte, h *web.Head, r *http.Request, uri string, ff *forwardFor, client netip.Addr) []byte {
	dst = append(dst, r.Method...)
	dst = append(dst, ' ')
	dst = append(dst, uri...)
	dst = append(dst, ' ')
	dst = append(dst, version(h.Major, h.Minor)...)
	dst = append(dst, "\r\n"...)
	var done []string
	emit := func(name string, vs []string) {
		for _, v := range vs {
			dst = append(dst, name...)
			dst = append(dst, ": "...)
			dst = append(dst, v...)
			dst = append(dst, "\r\n"...)
		}
	}
	hostName := "Host"
	for _, f := range h.Fields {
		if strings.EqualFold(f.Name, "host") {
			hostName = f.Name
			break
		}
	}
	if r.Host != "" {
		emit(hostName, []string{r.Host})
	}
	for _, f := range h.Fields {
		k := http.CanonicalHeaderKey(f.Name)
		if k == "Host" || hopByHop(k) || h.Chunked && k == "Content-Length" || slices.Contains(done, k) {
			continue
		}
		done = append(done, k)
		emit(f.Name, r.Header[k])
	}
	var added []string
	for k := range r.Header {
		if !slices.Contains(done, k) && !hopByHop(k) && k != "Host" {
			added = append(added, k)
		}
	}
	slices.Sort(added)
	for _, k := range added {
		emit(k, r.Header[k])
	}
	if ff != nil && client.IsValid() && !(ff.except.IsValid() && ff.except.Contains(client)) && !(ff.ifNone && len(r.Header.Values(ff.header)) > 0) {
		emit(ff.header, []string{client.String()})
	}
	return append(dst, "\r\n"...)
}

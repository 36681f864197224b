package httpproxy

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// HTTP compression (`compression algo|type|offload`), as haproxy 2.6's
// compression filter does it: the algorithm is chosen from the
// request's Accept-Encoding once the backend is known, and the answer is
// compressed when haproxy's conditions hold (compressible).

// compression is the settings in force for a request: the backend's
// algorithms and types when it has any, else the frontend's; offload
// from either.
func compression(fe, be *lbconfig.HTTPProxy) (algos, types []string, offload bool) {
	for _, h := range []*lbconfig.HTTPProxy{be, fe} {
		if h == nil || h.Compression == nil {
			continue
		}
		offload = offload || h.Compression.Offload
		if algos == nil && len(h.Compression.Algos) > 0 {
			algos = h.Compression.Algos
		}
		if types == nil && len(h.Compression.Types) > 0 {
			types = h.Compression.Types
		}
	}
	return algos, types, offload
}

// chooseAlgo picks the algorithm for r: among the Accept-Encoding
// values of the best q (above 0), the first the client lists that an
// algorithm takes ("*": the algorithm written last). "" is none.
func chooseAlgo(algos []string, r *http.Request) string {
	if len(algos) == 0 || oldMozilla(r.Header.Get("User-Agent")) {
		return ""
	}
	best, chosen := 0, ""
	for _, line := range r.Header.Values("Accept-Encoding") {
		for _, v := range strings.Split(line, ",") {
			v = strings.TrimLeft(v, " \t")
			tok := v[:tokenLen(v)]
			q := qvalue(v[len(tok):])
			if q <= best {
				continue
			}
			// haproxy walks its list, the reverse of the order written.
			for i := len(algos) - 1; i >= 0; i-- {
				if strings.HasPrefix(v, "*") || strings.EqualFold(tok, uaName(algos[i])) {
					chosen, best = algos[i], q
					break
				}
			}
		}
	}
	return chosen
}

// uaName is the encoding an algorithm answers to and announces.
func uaName(algo string) string {
	if algo == "raw-deflate" {
		return "deflate"
	}
	return algo
}

func tokenLen(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return i
		}
	}
	return len(s)
}

// qvalue is the q parameter after an encoding's token, in thousandths
// (1000 when absent), as haproxy's http_parse_qvalue reads it.
func qvalue(params string) int {
	for {
		params = strings.TrimLeft(params, " \t")
		if !strings.HasPrefix(params, ";") {
			return 1000
		}
		params = strings.TrimLeft(params[1:], " \t")
		if rest, ok := strings.CutPrefix(params, "q="); ok {
			return parseQ(rest)
		}
		if i := strings.IndexByte(params, ';'); i >= 0 {
			params = params[i:]
			continue
		}
		return 1000
	}
}

func parseQ(s string) int {
	if s == "" || s[0] < '0' || s[0] > '1' {
		return 0
	}
	q := int(s[0]-'0') * 1000
	if len(s) < 2 || s[1] != '.' {
		return q
	}
	mult := 100
	for i := 2; i < len(s) && mult > 0 && s[i] >= '0' && s[i] <= '9'; i++ {
		q += int(s[i]-'0') * mult
		mult /= 10
	}
	return min(q, 1000)
}

// oldMozilla is haproxy's check for old agents announcing "Mozilla/4",
// which get no compression unless they are MSIE 6 with SV1 or MSIE 7
// and later.
func oldMozilla(ua string) bool {
	if len(ua) < 9 || ua[:9] != "Mozilla/4" {
		return false
	}
	return len(ua) < 31 || ua[25:30] != "MSIE " || ua[30] < '6' ||
		(ua[30] == '6' && (len(ua) < 54 || ua[51:54] != "SV1"))
}

// compressible reports whether haproxy would compress resp to r.
func compressible(resp *http.Response, r *http.Request, types []string) bool {
	switch {
	case !resp.ProtoAtLeast(1, 1) || !r.ProtoAtLeast(1, 1) || r.Method == http.MethodHead:
		return false
	case resp.StatusCode < 200 || resp.StatusCode > 203:
		return false
	case resp.ContentLength < 0 && !slices.Contains(resp.TransferEncoding, "chunked"):
		return false // no length and not chunked: ends with the connection
	case len(resp.Header.Values("Content-Encoding")) > 0:
		return false
	}
	for _, v := range resp.Header.Values("Cache-Control") {
		for _, d := range strings.Split(v, ",") {
			if strings.TrimSpace(d) == "no-transform" {
				return false
			}
		}
	}
	if et := resp.Header.Values("Etag"); len(et) > 1 || len(et) == 1 && !validETag(et[0]) {
		return false
	}
	ct := resp.Header.Values("Content-Type")
	if len(ct) == 0 {
		return len(types) == 0
	}
	if hasPrefixFold(ct[0], "multipart") {
		return false
	}
	return len(types) == 0 || slices.ContainsFunc(types, func(t string) bool { return hasPrefixFold(ct[0], t) })
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func validETag(v string) bool {
	v = strings.TrimPrefix(v, "W/")
	return len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"'
}

// compress makes resp's body the algo-compressed stream of itself, with
// haproxy's headers: no Content-Length, a strong ETag made weak,
// "Vary: Accept-Encoding" added and the Content-Encoding.
func compress(resp *http.Response, algo string) {
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	if et := resp.Header.Get("Etag"); strings.HasPrefix(et, `"`) {
		resp.Header.Set("Etag", "W/"+et)
	}
	resp.Header.Add("Vary", "Accept-Encoding")
	resp.Header.Add("Content-Encoding", uaName(algo))
	cr := &compressReader{src: resp.Body, chunk: make([]byte, 16<<10)}
	switch algo {
	case "gzip":
		cr.zw, _ = gzip.NewWriterLevel(&cr.out, gzip.BestSpeed)
	case "deflate":
		cr.zw, _ = zlib.NewWriterLevel(&cr.out, zlib.BestSpeed)
	default: // raw-deflate
		cr.zw, _ = flate.NewWriter(&cr.out, flate.BestSpeed)
	}
	resp.Body = cr
}

// compressor is what gzip, zlib and flate writers share.
type compressor interface {
	io.WriteCloser
	Flush() error
}

// compressReader compresses src as it is read, flushing what it has
// after each read of src so that a streamed answer goes on as it comes
// (haproxy flushes its compressor at each block it forwards).
type compressReader struct {
	src   io.ReadCloser
	zw    compressor
	out   bytes.Buffer
	chunk []byte
	done  bool
}

func (c *compressReader) Read(p []byte) (int, error) {
	for c.out.Len() == 0 {
		if c.done {
			return 0, io.EOF
		}
		n, err := c.src.Read(c.chunk)
		if n > 0 {
			c.zw.Write(c.chunk[:n])
			if err == nil {
				c.zw.Flush()
			}
		}
		switch {
		case err == io.EOF:
			c.zw.Close()
			c.done = true
		case err != nil:
			return 0, err
		}
	}
	return c.out.Read(p)
}

func (c *compressReader) Close() error { return c.src.Close() }

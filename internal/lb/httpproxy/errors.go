package httpproxy

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strconv"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// haproxy 2.6's own answers (its default error messages): a status line,
// these three headers and a short HTML body.
var errorBodies = map[int]string{
	400: "<html><body><h1>400 Bad request</h1>\nYour browser sent an invalid request.\n</body></html>\n",
	401: "<html><body><h1>401 Unauthorized</h1>\nYou need a valid user and password to access this content.\n</body></html>\n",
	403: "<html><body><h1>403 Forbidden</h1>\nRequest forbidden by administrative rules.\n</body></html>\n",
	404: "<html><body><h1>404 Not Found</h1>\nThe resource could not be found.\n</body></html>\n",
	405: "<html><body><h1>405 Method Not Allowed</h1>\nA request was made of a resource using a request method not supported by that resource\n</body></html>\n",
	408: "<html><body><h1>408 Request Time-out</h1>\nYour browser didn't send a complete request in time.\n</body></html>\n",
	410: "<html><body><h1>410 Gone</h1>\nThe resource is no longer available and will not be available again.\n</body></html>\n",
	413: "<html><body><h1>413 Payload Too Large</h1>\nThe request entity exceeds the maximum allowed.\n</body></html>\n",
	425: "<html><body><h1>425 Too Early</h1>\nYour browser sent early data.\n</body></html>\n",
	429: "<html><body><h1>429 Too Many Requests</h1>\nYou have sent too many requests in a given amount of time.\n</body></html>\n",
	500: "<html><body><h1>500 Internal Server Error</h1>\nAn internal server error occurred.\n</body></html>\n",
	501: "<html><body><h1>501 Not Implemented</h1>\n.The server does not support the functionality required to fulfill the request.\n</body></html>\n",
	502: "<html><body><h1>502 Bad Gateway</h1>\nThe server returned an invalid or incomplete response.\n</body></html>\n",
	503: "<html><body><h1>503 Service Unavailable</h1>\nNo server is available to handle this request.\n</body></html>\n",
	504: "<html><body><h1>504 Gateway Time-out</h1>\nThe server didn't respond in time.\n</body></html>\n",
}

// fail answers status from the section's errorfile if it has one, else
// with haproxy's message. A negative status (the client left) answers
// nothing.
func (p *Proxy) fail(w http.ResponseWriter, r *http.Request, h *lbconfig.HTTPProxy, status int) {
	if status < 0 {
		return
	}
	if h != nil {
		if raw, ok := h.ErrorFiles[status]; ok {
			if writeRaw(w, r, raw) {
				return
			}
		}
	}
	body, ok := errorBodies[status]
	if !ok {
		body = "<html><body><h1>" + strconv.Itoa(status) + " " + http.StatusText(status) + "</h1>\n</body></html>\n"
	}
	hd := w.Header()
	for k := range hd {
		if k != "Connection" {
			delete(hd, k)
		}
	}
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Content-Type", "text/html")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		io.WriteString(w, body)
	}
}

// writeRaw answers with an errorfile: a whole HTTP response as written
// in the file. False when the file does not read as one (haproxy checks
// it at load; vipstack falls back to its message).
func writeRaw(w http.ResponseWriter, r *http.Request, raw []byte) bool {
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), r)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	hd := w.Header()
	for k, vs := range resp.Header {
		hd[k] = vs
	}
	if resp.ContentLength < 0 {
		hd.Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(body)
	return true
}

// writeAnswer writes http-request return's answer as haproxy 2.6 does
// (measured): the status, the rule's headers, Content-Length, and
// Content-Type when set; nothing else of the request's way.
func writeAnswer(w http.ResponseWriter, r *http.Request, status int, a *answer) {
	hd := w.Header()
	for k := range hd {
		if k != "Connection" {
			delete(hd, k)
		}
	}
	for _, kv := range a.headers {
		hd.Add(kv[0], kv[1])
	}
	hd.Set("Content-Length", strconv.Itoa(len(a.body)))
	if a.contentType != "" {
		hd.Set("Content-Type", a.contentType)
	} else {
		hd["Content-Type"] = nil // no sniffed type, as haproxy sends none
	}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		io.WriteString(w, a.body)
	}
}

// ErrorBody is the body of haproxy's own answer with status, for the
// loop engine (lb/httploop), which writes its answers itself.
func ErrorBody(status int) string {
	if body, ok := errorBodies[status]; ok {
		return body
	}
	return "<html><body><h1>" + strconv.Itoa(status) + " " + http.StatusText(status) + "</h1>\n</body></html>\n"
}

package httpproxy

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// bufferedBody is how much of a request's body option
// http-buffer-request waits for: haproxy's buffer (tune.bufsize 16384
// less tune.maxrewrite 1024); a longer body goes on once that much has
// come.
const bufferedBody = 16384 - 1024

// bufferBody carries out option http-buffer-request on r: it reads the
// body (up to bufferedBody bytes) before the request goes on, within
// timeout http-request (else timeout client), and takes out the Expect
// header, whose 100 Continue the proxy has answered (net/http does on
// the first read), as haproxy does. false: the body did not come in
// time.
func bufferBody(w http.ResponseWriter, r *http.Request, to lbconfig.Timeouts) bool {
	if r.Body == nil || r.Body == http.NoBody {
		return true
	}
	rc := http.NewResponseController(w)
	if d := firstSet(to.HTTPRequest, to.Client); d > 0 {
		rc.SetReadDeadline(time.Now().Add(d))
		defer rc.SetReadDeadline(time.Time{})
	}
	buf := make([]byte, bufferedBody)
	n, err := io.ReadFull(r.Body, buf)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF || errors.Is(err, os.ErrDeadlineExceeded) || isTimeout(err) {
		// Closed unread, the body is not drained before the answer
		// (net/http would wait for it), and the connection ends
		// after it, as haproxy's does.
		r.Body.Close()
		w.Header().Set("Connection", "close")
		return false
	}
	r.Header.Del("Expect")
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(buf[:n]), r.Body), r.Body}
	return true
}

package healthcheck

import (
	"context"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
)

// BodyMatch is haproxy's `http-check expect [!] string TEXT` (Re nil)
// or `rstring REGEX`: the answer's body, as much as the check's buffer
// holds, decides whatever the status, as in haproxy 2.6 (measured
// with haproxy 2.6.12): a match passes (L7OK with the status code and no
// info); no match is L7RSP "HTTP content check did not match"; with Not
// the outcomes swap, a match being L7RSP "HTTP check matched unwanted
// content"; an empty body is L7RSP "HTTP content check could not find a
// response body" either way.
type BodyMatch struct {
	Text string
	Re   *regexp.Regexp
	Not  bool
}

// judge reads what is left of resp's body (the probe's reader bounds it
// to the buffer) and returns the check's result.
func (m *BodyMatch) judge(ctx context.Context, resp *http.Response) Result {
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && ctx.Err() != nil {
		return Result{Status: L7TOUT, Info: "no response in time"}
	}
	if len(body) == 0 {
		return Result{Status: L7RSP, Info: "HTTP content check could not find a response body"}
	}
	var match bool
	if m.Re != nil {
		match = m.Re.Match(body)
	} else {
		match = strings.Contains(string(body), m.Text)
	}
	switch {
	case match && m.Not:
		return Result{Status: L7RSP, Info: "HTTP check matched unwanted content"}
	case !match && !m.Not:
		return Result{Status: L7RSP, Info: "HTTP content check did not match"}
	}
	return Result{OK: true, Status: L7OK, Code: resp.StatusCode}
}
